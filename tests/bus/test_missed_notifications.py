"""A change committed without a notification (its process died between commit and
NOTIFY) still wakes the waiters of the other processes: each sweeps the log
(``bus/sweep.py``). Once with the in-memory store and bus, once across two hubs on
PostgreSQL whose writer never notifies."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.bus.crossing import answered_across
from tests.conftest import ADMIN_TOKEN
from tickethub.bus.memory import InProcessBus
from tickethub.bus.sweep import MissedNotificationSweep
from tickethub.domain.events import EventType, NewEvent
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.ops.series import REGISTRY
from tickethub.server.runtime import HubRuntime
from tickethub.services.events import EventService
from tickethub.settings import Settings
from tickethub.testing import MemoryStore

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
SWEEP_SECONDS = 0.05


def _change(store: MemoryStore, ticket_id: int, path: str) -> int:
    """Commit an event for the ticket, as another process would; its seq."""
    with store.write() as uow:
        return uow.events.append(NewEvent(EventType.MESSAGE_POSTED, ticket_id, path,
                                          "alice", {}), NOW).seq


@contextlib.asynccontextmanager
async def _sweeping(bus: InProcessBus, store: MemoryStore
                    ) -> AsyncIterator[MissedNotificationSweep]:
    sweep = MissedNotificationSweep(bus, EventService(store), SWEEP_SECONDS)
    task = asyncio.create_task(sweep.run())
    await asyncio.sleep(SWEEP_SECONDS * 2)  # it has read where the log ends
    try:
        yield sweep
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_an_unannounced_change_wakes_its_waiters_and_an_announced_one_does_not(
        ) -> None:
    store = MemoryStore()
    with store.write() as uow:
        quiet, loud = (uow.tickets.add(TicketDraft(Kind.QUESTION, t), "bot", NOW)
                       for t in ("quiet", "loud"))
    bus = InProcessBus()
    bus.bind(asyncio.get_running_loop())
    counted = REGISTRY.get_sample_value("tickethub_missed_notifications_total") or 0.0
    async with _sweeping(bus, store) as sweep:
        with bus.ticket_signal(quiet.id) as unannounced, bus.log_signal() as log:
            seq = _change(store, quiet.id, quiet.path)  # committed; no notify follows
            await asyncio.wait_for(unannounced, 2)
            assert unannounced.result() is None  # read it back
            assert log.event.is_set()  # streams re-read the log too
            assert sweep.woken == 1 and bus.last_seq >= seq
        with bus.ticket_signal(loud.id) as announced:
            seq = _change(store, loud.id, loud.path)
            bus.notify(seq, [], touched=[loud.id])  # the ordinary path
            await asyncio.wait_for(announced, 2)
            with bus.ticket_signal(loud.id) as after:
                await asyncio.sleep(SWEEP_SECONDS * 5)  # sweeps pass over the change
                assert not after.done()  # heard already: nobody woken twice
        with bus.ticket_signal(loud.id) as rechecked:
            _change(store, loud.id, loud.path)  # unannounced, but then everyone reads
            bus.recheck_all()  # back (a LISTEN connection came back): nothing to find
            await asyncio.wait_for(rechecked, 2)
            await asyncio.sleep(SWEEP_SECONDS * 5)
        assert sweep.woken == 1
        assert REGISTRY.get_sample_value(  # for operators: /metrics
            "tickethub_missed_notifications_total") == counted + 1


async def test_a_waiter_in_one_process_wakes_when_the_writer_in_another_never_notifies(
        tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("several hub processes share PostgreSQL only")
    settings = Settings(data_dir=tmp_path, database_url=database_url,
                        admin_token=ADMIN_TOKEN, bus_sweep_seconds=0.2)
    hub_a, hub_b = HubRuntime(settings), HubRuntime(settings)
    monkeypatch.setattr(hub_b.bus, "_send", lambda channel, payloads: None)
    try:
        # Without the sweep A's waiter would sleep out its 30 s long-poll.
        response, woke_after = await answered_across(hub_a, hub_b, wait_seconds=30)
        assert response.json()["answer"]["text"] == "from B"
        assert woke_after < 5
    finally:
        hub_a.close()
        hub_b.close()
