"""After a bus may have missed notifications (its LISTEN connection was away), every
waiter is woken to read its ticket back, and nothing is taken as quiet."""

from __future__ import annotations

import asyncio

from tickethub.bus.memory import InProcessBus


async def test_recheck_all_wakes_every_waiter_to_read_back() -> None:
    bus = InProcessBus()
    bus.bind(asyncio.get_running_loop())
    bus._wake(7, {1: None})
    assert bus.quiet_since(1, 7)
    with bus.ticket_signal(1) as first, bus.ticket_signal(2) as second, \
            bus.log_signal() as log, bus.state_signal() as state:
        assert bus.waiter_count == 2
        bus.recheck_all()
        assert first.done() and first.result() is None  # None: read it back
        assert second.done() and second.result() is None
        assert log.event.is_set() and state.event.is_set()
        assert bus.waiter_count == 0
        with bus.ticket_signal(1) as again:  # a new registration waits as usual
            assert not again.done()
            assert bus.waiter_count == 1
    assert bus.waiter_count == 0
    assert not bus.quiet_since(1, 7)
