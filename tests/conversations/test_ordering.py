"""One thread's messages are handled one at a time, in arrival order, nothing lost —
also when two hub processes share the database; platform retries are dropped."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from tests.conversations.conftest import Hub
from tickethub.conversations.handlers import Handler, Step, Trigger, Turn, command
from tickethub.conversations.model import ChatMessage

FLOOD = 1000


class Tally:
    """``@bot tally`` opens a conversation that remembers every later message in order."""

    name = "tally"
    triggers: tuple[Trigger, ...] = (command("tally"),)
    timeout = None

    def start(self, turn: Turn) -> Step:
        return Step(state={"seen": []})

    def advance(self, turn: Turn, state: dict[str, Any]) -> Step:
        return Step(state={"seen": [*state["seen"], turn.text]})

    def help(self, state: dict[str, Any]) -> str:
        return "keep talking"


def _tally() -> list[Handler]:
    return [Tally()]


def _msg(n: int | str, root: str | None = "$root") -> ChatMessage:
    return ChatMessage("test", "!room", f"$m{n}", "alice", str(n), thread_root=root)


def test_a_flood_into_one_thread_is_handled_in_order(make_hub: Callable[..., Hub]) -> None:
    hub = make_hub(handlers=_tally)
    hub.engine.receive(ChatMessage("test", "!room", "$root", "alice", "@bot tally"))
    for n in range(FLOOD):
        hub.engine.receive(_msg(n))
    conv = hub.state.by_ticket(1)
    assert conv is not None
    assert conv.state["h"]["seen"] == [str(n) for n in range(FLOOD)]
    items = hub.state.items(conv.thread)
    assert len(items) == FLOOD + 1 and {i.status for i in items} == {"done"}


def test_retries_of_one_event_are_handled_once(make_hub: Callable[..., Hub]) -> None:
    hub = make_hub(handlers=_tally)
    hub.engine.receive(ChatMessage("test", "!room", "$root", "alice", "@bot tally"))
    first = hub.engine.receive(_msg(1))
    again = hub.engine.receive(_msg(1))
    assert not first.duplicate and again.duplicate and again.replies == []
    conv = hub.state.by_ticket(1)
    assert conv is not None and conv.state["h"]["seen"] == ["1"]


def test_two_processes_on_one_thread_keep_arrival_order(make_hub: Callable[..., Hub]) -> None:
    one = make_hub(handlers=_tally)
    two = make_hub(handlers=_tally)  # a second hub process: own store, own engine
    one.engine.receive(ChatMessage("test", "!room", "$root", "alice", "@bot tally"))
    errors: list[BaseException] = []

    def feed(hub: Hub, numbers: range) -> None:
        try:
            for n in numbers:
                hub.engine.receive(_msg(n))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=feed, args=(one, range(0, 200, 2))),
               threading.Thread(target=feed, args=(two, range(1, 200, 2)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    conv = one.state.by_ticket(1)
    assert conv is not None
    arrival = [i.body for i in one.state.items(conv.thread)[1:]]
    assert sorted(arrival, key=int) == [str(n) for n in range(200)]
    assert conv.state["h"]["seen"] == arrival  # handled exactly once each, in arrival order
    # Each message is on the ticket once. (The audit trail is written after the commit,
    # so two processes' ticket writes may interleave; the handling order above is exact.)
    messages = [m.body for m in one.tickets.messages(1) if m.author == "alice"]
    assert sorted(messages[1:], key=int) == [str(n) for n in range(200)]
