"""Transcripts: a whole conversation as text, replayed as a test.

Format, one line per message (blank lines and ``#`` comments are skipped)::

    > alice: @bot foodselection tomorrow      # alice writes in the thread
    < bot: Which dish for Fri 2 Jan?          # the bot must answer exactly this
      1. Pasta                                # two-space indent: the same message goes on
    > bob: anyone hungry?                     # a second person in the same thread
    > alice (reply): 3                        # a reply to the bot's last question
    > alice (dm): hunter2                     # a direct message to the bot
    < bot (dm alice): Thanks.                 # the bot writes to alice privately
    ~ restart                                 # a new engine on the same database
    ~ wait 11m                                # the clock moves on; due timeouts fire
    ~ retry                                   # the platform re-sends the last message

The first message of the transcript roots the thread; later ones are in its thread.
:func:`replay` runs the inputs through an engine and compares the whole rendered
conversation with the transcript, so a failure shows the full diff.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tickethub.conversations.engine import ConversationEngine
from tickethub.conversations.model import ChatMessage, Outcome, Reply
from tickethub.testing import FakeClock

_LINE = re.compile(r"^(?P<dir>[<>]) (?P<who>[^:(]+?)(?: \((?P<how>[^)]*)\))?: ?(?P<text>.*)$")
_WAIT = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


@dataclass(frozen=True, slots=True)
class Line:
    """One transcript entry: ``>`` a person writes, ``<`` the bot answers, ``~`` an
    action (``restart``, ``wait 10m``, ``retry``)."""

    mark: str
    who: str = ""
    how: str = ""
    text: str = ""

    def render(self) -> str:
        if self.mark == "~":
            return f"~ {self.text}"
        how = f" ({self.how})" if self.how else ""
        first, *more = self.text.split("\n")
        return "\n".join([f"{self.mark} {self.who}{how}: {first}", *(f"  {m}" for m in more)])


def parse(text: str) -> list[Line]:
    lines: list[Line] = []
    for raw in text.splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if raw.startswith("  ") and lines and lines[-1].mark != "~":
            last = lines[-1]
            lines[-1] = Line(last.mark, last.who, last.how, f"{last.text}\n{raw[2:]}")
            continue
        if raw.startswith("~ "):
            lines.append(Line("~", text=raw[2:].strip()))
            continue
        found = _LINE.match(raw)
        if found is None:
            raise ValueError(f"not a transcript line: {raw!r}")
        lines.append(Line(found["dir"], found["who"].strip(), found["how"] or "",
                          found["text"]))
    return lines


class Replayer:
    """Drives an engine from transcript lines; ``make_engine`` is called at the start
    and again for every ``~ restart`` (it must build a fresh engine on the same
    database and the same ``clock``)."""

    def __init__(self, make_engine: Callable[[], ConversationEngine], clock: FakeClock,
                 *, transport: str = "test", room: str = "!room") -> None:
        self._make = make_engine
        self._clock = clock
        self._transport = transport
        self._room = room
        self.engine = make_engine()
        self._root: str | None = None
        self._last: ChatMessage | None = None
        self._last_prompt: str | None = None
        self._sent = 0
        self._n = 0
        self.traces: list[str] = []

    def run(self, lines: list[Line]) -> list[Line]:
        """Play the ``>`` and ``~`` lines; return them with the bot's actual answers."""
        out: list[Line] = []
        for line in lines:
            if line.mark == "<":
                continue
            out.append(line)
            out.extend(self._render(self._play(line)))
        return out

    def _play(self, line: Line) -> Outcome:
        if line.mark == "~":
            return self._action(line.text)
        self._n += 1
        event_id = f"$e{self._n}-{line.who}"
        direct = line.how == "dm"
        msg = ChatMessage(
            self._transport, f"!dm-{line.who}" if direct else self._room, event_id,
            line.who, line.text,
            thread_root=None if direct else self._root,
            reply_to=self._last_prompt if line.how == "reply" else None, direct=direct)
        if not direct and self._root is None:
            self._root = event_id
        self._last = msg
        return self.engine.receive(msg)

    def _action(self, text: str) -> Outcome:
        verb, _, arg = text.partition(" ")
        if verb == "restart":
            self.engine = self._make()
            return self.engine.expire_due()
        if verb == "wait":
            found = _WAIT.match(arg.strip())
            if found is None:
                raise ValueError(f"wait needs a duration like 10m, not {arg!r}")
            self._clock.advance(**{_UNITS[found[2]]: int(found[1])})
            return self.engine.expire_due()
        if verb == "retry":
            assert self._last is not None, "nothing to retry yet"
            return self.engine.receive(self._last)
        raise ValueError(f"unknown transcript action {text!r}")

    def _render(self, outcome: Outcome) -> list[Line]:
        self.traces.extend(outcome.traces)
        rendered = []
        for reply in outcome.replies:
            self._sent += 1
            event_id = f"$bot{self._sent}"
            self.engine.sent(reply, event_id)
            if reply.prompt:
                self._last_prompt = event_id
            rendered.append(_bot_line(reply))
        return rendered


def _bot_line(reply: Reply) -> Line:
    how = f"dm {reply.direct_to}" if reply.direct_to else ""
    return Line("<", "bot", how, reply.text)


def render(lines: list[Line]) -> str:
    return "\n".join(line.render() for line in lines)


def replay(text: str, make_engine: Callable[[], ConversationEngine], clock: FakeClock
           ) -> Replayer:
    """Replay a transcript; raises ``AssertionError`` showing expected and actual when
    the bot said anything else. Returns the replayer (its ``engine`` and ``traces``)."""
    expected = parse(text)
    replayer = Replayer(make_engine, clock)
    actual = replayer.run(expected)
    want, got = render(expected), render(actual)
    if want != got:
        raise AssertionError(f"transcript differs\n--- expected\n{want}\n--- actual\n{got}")
    return replayer


