"""The small ports: each real adapter and its fake pass the same contract."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from tickethub.bus.memory import InProcessBus
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket
from tickethub.server.system import SystemClock, TokenGenerator
from tickethub.testing import CountingTokens, FakeClock, RecordingNotifier


@pytest.mark.parametrize("clock", [SystemClock(), FakeClock()], ids=["system", "fake"])
def test_clock_gives_aware_utc_times_that_never_go_back(clock):
    first, second = clock.now(), clock.now()
    assert first.tzinfo is not None and first.utcoffset().total_seconds() == 0
    assert second >= first


@pytest.mark.parametrize("tokens", [TokenGenerator(), CountingTokens()], ids=["real", "fake"])
def test_tokens_are_unique_prefixed_and_long(tokens):
    made = {tokens.token() for _ in range(200)}
    assert len(made) == 200
    assert all(t.startswith("th_") and len(t) >= 40 for t in made)


def _ticket(ticket_id: int) -> Ticket:
    now = datetime.now(UTC)
    return Ticket(id=ticket_id, kind=Kind.QUESTION, title="t", body="", status=Status.ANSWERED,
                  created_by="a", created_at=now, updated_at=now)


def test_notifiers_accept_notifications_with_nobody_listening():
    for notifier in (InProcessBus(), RecordingNotifier()):
        notifier.notify(1, [_ticket(1)])
    recording = RecordingNotifier()
    recording.notify(7, [_ticket(3), _ticket(4)])
    assert recording.calls == [(7, [3, 4])]


async def test_the_bus_hands_the_new_state_to_waiters_from_any_thread():
    bus = InProcessBus()
    bus.bind(asyncio.get_running_loop())
    with bus.ticket_signal(5) as changed, bus.log_signal() as log:
        await asyncio.to_thread(bus.notify, 9, [_ticket(5)])
        ticket = await asyncio.wait_for(changed, 2)
        assert ticket.id == 5 and ticket.status is Status.ANSWERED
        assert await log.wait(2)
    assert bus.waiter_count == 0 and bus.last_seq == 9


async def test_closing_the_bus_wakes_every_waiter_now_and_later():
    bus = InProcessBus()
    bus.bind(asyncio.get_running_loop())
    with bus.ticket_signal(5) as changed, bus.log_signal() as log:
        bus.close()
        assert bus.closing
        assert await asyncio.wait_for(changed, 2) is None  # no new state: read it back
        assert await log.wait(2)
    with bus.ticket_signal(6) as later, bus.log_signal() as later_log:
        assert later.done() and await later_log.wait(0)
    bus.bind(asyncio.get_running_loop())  # a new run: open again
    assert not bus.closing
    with bus.ticket_signal(7) as fresh:
        assert not fresh.done()
