"""The state signal (the deadline loop's wake-up) is set by changes that may bring a
deadline closer, and not by others: a burst of answers costs the deadline loop no
reads."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from tickethub.bus.memory import InProcessBus
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def _ticket(ticket_id: int, status: Status = Status.OPEN, **fields: object) -> Ticket:
    return Ticket(id=ticket_id, kind=Kind.QUESTION, title="t", body="", status=status,
                  created_by="agent", created_at=NOW, updated_at=NOW, **fields)  # type: ignore[arg-type]


async def _signals_after(notify: tuple[tuple[Ticket, ...], tuple[int, ...]]
                         ) -> tuple[bool, bool]:
    """(log signal set, state signal set) after one notification, dispatched."""
    bus = InProcessBus()
    bus.bind(asyncio.get_running_loop())
    tickets, touched = notify
    with bus.log_signal() as log, bus.state_signal() as state:
        bus.notify(1, tickets, touched)
        return log.event.is_set(), state.event.is_set()


async def test_tickets_without_deadlines_set_only_the_log_signal() -> None:
    answered = _ticket(1, Status.ANSWERED)
    asked = _ticket(2)
    assert await _signals_after(((answered, asked), ())) == (True, False)


async def test_messages_only_set_only_the_log_signal() -> None:
    assert await _signals_after(((), (1, 2))) == (True, False)


async def test_a_due_at_or_a_deferral_end_sets_the_state_signal() -> None:
    due = _ticket(1, due_at=NOW + timedelta(seconds=5))
    deferred = _ticket(2, Status.DEFERRED, next_attention_at=NOW + timedelta(hours=1))
    plain = _ticket(3)
    assert await _signals_after(((plain, due), ())) == (True, True)
    assert await _signals_after(((deferred,), ())) == (True, True)


async def test_a_change_of_unknown_state_sets_the_state_signal() -> None:
    # Another process's change (the PostgreSQL bus): only ids, read back.
    bus = InProcessBus()
    bus.bind(asyncio.get_running_loop())
    with bus.state_signal() as state:
        bus._wake(3, {1: None})
        assert state.event.is_set()
