"""The foodselection conversation from the issue, said over any webhook: alice orders,
bob talks in her thread meanwhile (kept, not obeyed), a platform retry in between."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bench.chat_standin import Call, StandIn

from tickethub.domain.tickets import TicketQuery
from tickethub.server.runtime import HubRuntime

Say = Callable[[str, str], Awaitable[None]]


async def order_lunch(start: Callable[[], Awaitable[None]], say: Say,
                      standin: StandIn, before: int = 0) -> list[Call]:
    """``start()`` sends alice's command (and a retry of it); ``say(who, text)`` a
    message in the thread. Returns the bot's four replies, in order."""
    await start()
    assert "Which dish" in str((await standin.wait_for(before + 1))[-1].body)
    await say("bob", "2")
    await say("alice", "3")
    assert "dietary" in str((await standin.wait_for(before + 2))[-1].body)
    await say("alice", "Gluten-free")
    assert "save it?" in str((await standin.wait_for(before + 3))[-1].body)
    await say("alice", "yes")
    calls = (await standin.wait_for(before + 4))[before:]
    assert "Saved: Falafel bowl (gluten-free) for alice" in str(calls[-1].body)
    return calls


def saved_order(runtime: HubRuntime, bob: str) -> None:
    """One ticket, answered with alice's order; bob's "2" kept on it, not obeyed."""
    tickets = runtime.tickets.list(TicketQuery(label="foodselection")).items
    assert len(tickets) == 1
    ticket = runtime.tickets.get(tickets[0].id)
    assert ticket.answer is not None
    assert ticket.answer.data["dish"] == "Falafel bowl"
    assert ticket.answer.data["diet"] == "Gluten-free"
    assert ticket.answer.data["person"] == "alice"
    said = [m.body for m in runtime.tickets.messages(ticket.id) if m.author == bob]
    assert said == ["2"]
