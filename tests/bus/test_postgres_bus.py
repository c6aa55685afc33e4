"""Two hub processes on one PostgreSQL wake each other's waiters (LISTEN/NOTIFY)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from tests.bus.crossing import answered_across
from tests.conftest import ADMIN_TOKEN
from tickethub.bus.postgres import PostgresBus, _payloads
from tickethub.domain.status import Status
from tickethub.domain.tickets import Moved
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings


async def test_an_answer_in_one_process_wakes_a_waiter_in_another(tmp_path: Path,
                                                                  database_url: str):
    if not database_url.startswith("postgresql"):
        pytest.skip("LISTEN/NOTIFY is a PostgreSQL feature")
    settings = Settings(data_dir=tmp_path, database_url=database_url, admin_token=ADMIN_TOKEN)
    hub_a, hub_b = HubRuntime(settings), HubRuntime(settings)
    assert isinstance(hub_a.bus, PostgresBus) and isinstance(hub_b.bus, PostgresBus)
    try:
        response, woke_after = await answered_across(hub_a, hub_b)
        assert response.json()["answer"]["text"] == "from B"
        assert woke_after < 5
    finally:
        hub_a.close()
        hub_b.close()


async def test_a_notification_of_many_moved_tickets_reaches_every_waiter_as_moved() -> None:
    """Every id goes out (chunks within NOTIFY's 8000 bytes, none dropped), and a
    ``Moved`` arrives as one, so the other process's waiters need no read."""
    at = datetime(2026, 11, 24, 6, 0, 1, 123456, tzinfo=UTC)
    moved = [Moved(10_000_000 + i, Status.EXPIRED, at, 99_999) for i in range(1000)]
    touched = [5, 6]
    payloads = _payloads("sender", 42, moved, touched)
    assert len(payloads) == 3 and all(len(p.encode()) < 8000 for p in payloads)
    receiver = PostgresBus(make_url("postgresql://hub@localhost/hub"))
    receiver.bind(asyncio.get_running_loop())
    with receiver.ticket_signal(moved[-1].id) as last, receiver.ticket_signal(5) as plain:
        for payload in payloads:
            receiver._receive(payload)
        assert last.result() == moved[-1]
        assert plain.result() is None  # a touched ticket: read back
    assert receiver.last_seq == 42


async def test_a_broadcast_reaches_the_other_processes_subscribers_only(
        database_url: str) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("LISTEN/NOTIFY is a PostgreSQL feature")
    heard: dict[str, list[str]] = {"one": [], "other": []}
    arrived = asyncio.Event()

    def on_other(message: str) -> None:
        heard["other"].append(message)
        if len(heard["other"]) == 2:
            arrived.set()

    async with _two_buses(database_url, {"throttles": heard["one"].append},
                          {"throttles": on_other, "crashing": lambda message: 1 / 0}
                          ) as (one, _):
        one.broadcast("crashing", "x")  # a handler that fails does not end the listening
        one.broadcast("throttles", '{"first": "a:b::c"}')  # colons in it are its own
        one.broadcast("throttles", "second")
        await asyncio.wait_for(arrived.wait(), 10)
        assert heard == {"one": [], "other": ['{"first": "a:b::c"}', "second"]}
        with pytest.raises(ValueError):
            one.broadcast("throttles", "x" * 8000)
        with pytest.raises(ValueError):
            one.broadcast("Bad Topic", "x")


async def test_after_stop_a_broadcast_is_dropped_and_a_notify_leaves_no_connection_open(
        database_url: str) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("LISTEN/NOTIFY is a PostgreSQL feature")
    heard: list[str] = []
    async with _two_buses(database_url, {}, {"throttles": heard.append}) as (one, _):
        await one.stop()  # stopping twice (again on leaving) is allowed
        one.broadcast("throttles", "late")  # the process is leaving
        assert not [t for t in threading.enumerate() if t.name.startswith("bus-broadcast")]
        # A change committed while stopping is still sent (``notify``), and the
        # connection it goes out on does not stay open.
        one.notify(1, [], touched=[1])
        await asyncio.sleep(0.5)
        assert heard == []
        engine = create_engine(database_url)
        try:
            with engine.connect() as connection:
                senders = connection.exec_driver_sql(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND state = 'idle' AND starts_with(query, 'SELECT pg_notify')").scalar()
        finally:
            engine.dispose()
        assert senders == 0


@asynccontextmanager
async def _two_buses(database_url: str, one_hears: dict[str, Callable[[str], object]],
                     other_hears: dict[str, Callable[[str], object]]
                     ) -> AsyncIterator[tuple[PostgresBus, PostgresBus]]:
    """Two started buses on ``database_url`` (two hub processes, as far as the bus can
    tell), subscribed to the topics given; both stopped on leaving."""
    url = make_url(database_url)
    buses = PostgresBus(url), PostgresBus(url)
    for bus, hears in zip(buses, (one_hears, other_hears), strict=True):
        for topic, handler in hears.items():
            bus.subscribe(topic, handler)
        bus.bind(asyncio.get_running_loop())
        await bus.start()
    try:
        yield buses
    finally:
        for bus in buses:
            await bus.stop()
