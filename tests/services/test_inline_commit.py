"""On SQLite the hub's group commit writes a batch on the event loop itself when the
write lock is free at once (``SqlStore.write_now``), else on a thread as before: a
lock held by another connection (another process: the CLI) or thread never blocks the
loop, and a batch whose transaction fails is written again on the thread path, one item
per transaction, so only the item that broke it fails."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text

from tickethub.domain.actors import Actor, Role
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import TicketDraft
from tickethub.errors import WouldBlock
from tickethub.server.runtime import HubRuntime
from tickethub.services.ports import UnitOfWork
from tickethub.services.ticket_writes import WriteBatch
from tickethub.settings import Settings
from tickethub.store.sql_store import SqlStore
from tickethub.testing import FakeClock

AGENT = Actor("bot", Role.AGENT)
ALICE = Actor("alice", Role.RESPONDER)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "hub.db"


@pytest.fixture
def hub(tmp_path: Path, db: Path) -> Iterator[HubRuntime]:
    runtime = HubRuntime(Settings(data_dir=tmp_path, database_url=f"sqlite:///{db}"),
                         clock=FakeClock(), components=[])
    yield runtime
    runtime.close()


def _store(hub: HubRuntime) -> SqlStore:
    store = hub.tickets._store
    assert isinstance(store, SqlStore)
    return store


def test_write_now_refuses_while_another_connection_holds_the_lock(
        hub: HubRuntime, db: Path) -> None:
    store = _store(hub)
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(WouldBlock), store.write_now():
            raise AssertionError("began while another connection held the write lock")
    finally:
        other.execute("ROLLBACK")
        other.close()
    with store.write_now() as uow:  # free again
        assert uow.connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 0
    with store.write() as uow:  # the pool's connections keep the usual busy timeout
        assert uow.connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000


def test_write_now_takes_no_connection_from_the_pool(hub: HubRuntime) -> None:
    """Its own connection, kept: a pool with none free (or a new connection's setup)
    can not hold up the event loop."""
    store = _store(hub)
    checkouts: list[object] = []
    event.listen(store.engine, "checkout", lambda *args: checkouts.append(args))
    for _ in range(5):
        with store.write_now() as uow:
            uow.connection.exec_driver_sql("SELECT 1")
    assert len(checkouts) <= 1  # the first opens it
    with store.write():
        pass
    assert len(checkouts) <= 2


def test_write_now_follows_background_checkpoints(hub: HubRuntime) -> None:
    """Its connection stays open, yet checkpoints go off for it while the hub's
    checkpoint loop runs (``store/checkpoints.py``) and back on after."""
    store = _store(hub)
    with store.write_now():
        pass  # opened before the loop runs
    assert hub.wal_checkpoints is not None
    with hub.wal_checkpoints.in_background(), store.write_now() as uow:
        assert uow.connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0
    with store.write_now() as uow:
        assert uow.connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 1000


def test_write_now_refuses_while_another_thread_writes(hub: HubRuntime) -> None:
    store = _store(hub)
    entered, release = threading.Event(), threading.Event()

    def writer() -> None:
        with store.write():
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert entered.wait(10)
        with pytest.raises(WouldBlock), store.write_now():
            raise AssertionError("began while another thread held the write lock")
    finally:
        release.set()
        thread.join()


def test_a_failed_write_now_stores_nothing(hub: HubRuntime) -> None:
    store = _store(hub)
    with pytest.raises(RuntimeError), store.write_now() as uow:
        uow.connection.execute(text("CREATE TABLE scratch (x INTEGER)"))
        raise RuntimeError("broke mid-transaction")
    with store.read() as uow:
        assert uow.connection.exec_driver_sql(
            "SELECT count(*) FROM sqlite_master WHERE name = 'scratch'").scalar() == 0


async def test_an_answer_waits_on_a_thread_while_another_process_writes(
        hub: HubRuntime, db: Path) -> None:
    """The event loop keeps running while the lock is held elsewhere; the answer is
    written (and only then acknowledged) once it is free."""
    ticket, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="q"))
    threads: list[int] = []
    commit = hub.tickets._grouped._commit

    def recording(items: Sequence[Any]) -> Any:
        threads.append(threading.get_ident())
        return commit(items)

    hub.tickets._grouped._commit = recording
    other = sqlite3.connect(db, isolation_level=None)
    async with hub.running():
        other.execute("BEGIN IMMEDIATE")
        answer = asyncio.create_task(hub.tickets.aanswer(ALICE, ticket.id, "yes", None, "api"))
        while not threads:  # the loop is not blocked: it gets here, the thread waits
            await asyncio.sleep(0.01)
        assert not answer.done()
        assert hub.tickets.get(ticket.id).status is Status.OPEN  # not written yet
        other.execute("ROLLBACK")
        answered = await answer
    other.close()
    assert threads[0] != threading.get_ident()
    assert answered.status is Status.ANSWERED
    assert hub.tickets.get(ticket.id).answer.text == "yes"  # type: ignore[union-attr]


@dataclass
class Boom:
    """An item of a door's part that breaks any transaction it is in."""


class BoomPart:
    kinds = (Boom,)

    def __init__(self) -> None:
        self.threads: list[int] = []

    def early(self, item: Any) -> bool:
        return False

    def write_part(self, uow: UnitOfWork, items: Sequence[tuple[int, Any]],
                   batch: WriteBatch) -> None:
        self.threads.append(threading.get_ident())
        raise RuntimeError("boom")


async def test_a_failed_inline_batch_is_written_again_item_by_item(hub: HubRuntime) -> None:
    ticket, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="q"))
    part = BoomPart()
    hub.tickets.add_part(part)
    async with hub.running():
        answered, boom = await asyncio.gather(
            hub.tickets.aanswer(ALICE, ticket.id, "yes", None, "api"),
            hub.tickets.awrite(Boom()), return_exceptions=True)
    assert part.threads[0] == threading.get_ident()  # tried inline first, on the loop
    assert all(t != threading.get_ident() for t in part.threads[1:])  # then on a thread
    assert isinstance(boom, RuntimeError)
    assert not isinstance(answered, BaseException) and answered.status is Status.ANSWERED
    assert hub.tickets.get(ticket.id).answer.text == "yes"  # type: ignore[union-attr]


def test_closing_the_store_closes_the_connection_write_now_keeps(hub: HubRuntime) -> None:
    store = _store(hub)
    with store.write_now() as uow:
        kept = uow.connection.connection.driver_connection
    store.close()
    with pytest.raises(sqlite3.ProgrammingError):
        kept.execute("SELECT 1")  # type: ignore[union-attr]
    with store.write_now() as uow:  # a new one, when written again
        assert uow.connection.exec_driver_sql("SELECT 1").scalar() == 1
