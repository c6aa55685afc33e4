"""Handlers and their triggers: what a chat plugin registers with the engine.

A handler is "check, then handle" (python-telegram-bot's shape): its triggers decide
whether a message starts it (a command word, a regular expression, or a platform event);
``start`` answers that message. A *conversational* handler returns a :class:`Step` with
``state`` set, which binds the thread to it: later messages from the participant go to
``advance`` until a step comes back with ``state=None`` (an explicit end).

State is plain JSON (it is stored with the conversation's ticket), never objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from tickethub.services.tickets import TicketService

Ending = Literal["done", "cancelled", "handoff"]


@dataclass(frozen=True, slots=True)
class Trigger:
    """What starts a handler: ``command`` (the first word, after ``@bot``, ``/`` or
    ``!``), ``pattern`` (a regex searched in the text) or ``event`` (a platform event
    kind such as ``member_joined``)."""

    command: str | None = None
    pattern: re.Pattern[str] | None = None
    event: str | None = None


def command(name: str) -> Trigger:
    return Trigger(command=name.lower())


def pattern(regex: str) -> Trigger:
    return Trigger(pattern=re.compile(regex, re.IGNORECASE))


def event(kind: str) -> Trigger:
    return Trigger(event=kind)


@dataclass(frozen=True, slots=True)
class Turn:
    """One message as a handler sees it: who, what (``text`` without the command word
    for ``start``), whether it came privately, when, and read access to tickets."""

    sender: str
    text: str
    direct: bool
    at: datetime
    tickets: TicketService
    match: re.Match[str] | None = None


@dataclass(frozen=True, slots=True)
class Step:
    """A handler's answer. ``say``: messages to the thread, the last one a question when
    ``state`` is set. ``state``: the conversation's new state, ``None`` to end it with
    ``ending`` and ``result`` (a finished conversation answers its ticket with
    ``result``; a hand-off leaves the ticket open for a person). ``direct``: the next
    answer must come by direct message. ``secret``: the message just handled must not be
    kept in the audit trail (it carried a secret)."""

    say: list[str] = field(default_factory=list)
    state: dict[str, Any] | None = None
    ending: Ending = "done"
    result: Any = None
    direct: bool = False
    secret: bool = False


class Handler(Protocol):
    name: str
    triggers: tuple[Trigger, ...]
    timeout: timedelta | None

    def start(self, turn: Turn) -> Step:
        """Answer the message that triggered this handler."""
        ...

    def advance(self, turn: Turn, state: dict[str, Any]) -> Step:
        """Answer the next message of an open conversation."""
        ...

    def help(self, state: dict[str, Any]) -> str:
        """What the participant can say now."""
        ...


def strip_address(text: str, bot_names: tuple[str, ...]) -> tuple[str, bool]:
    """``text`` without a leading ``@bot``/``bot:`` mention or ``/``/``!`` prefix, and
    whether it was addressed to the bot that way."""
    stripped = text.strip()
    lowered = stripped.lower()
    for name in sorted(bot_names, key=len, reverse=True):
        for form in (f"@{name}", name):
            for tail in (":", ",", " ", ""):
                mention = f"{form}{tail}".lower()
                if tail == "" and lowered != mention:
                    continue
                if lowered.startswith(mention):
                    return stripped[len(mention):].strip(), True
    if stripped[:1] in ("/", "!"):
        return stripped[1:], True
    return stripped, False


def match_trigger(handler: Handler, kind: str, text: str, addressed: bool
                  ) -> tuple[str, re.Match[str] | None] | None:
    """``(rest of the text, regex match)`` when one of ``handler``'s triggers fires."""
    for trigger in handler.triggers:
        if trigger.event is not None:
            if trigger.event == kind:
                return text, None
            continue
        if kind != "message":
            continue
        if trigger.command is not None and addressed:
            word, _, rest = text.partition(" ")
            if word.lower() == trigger.command:
                return rest.strip(), None
        if trigger.pattern is not None:
            found = trigger.pattern.search(text)
            if found is not None:
                return text, found
    return None
