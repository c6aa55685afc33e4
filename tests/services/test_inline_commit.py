"""On SQLite the hub's group commit writes a batch on the event loop itself when the
write lock is free at once (``SqlStore.write_now``), else on a thread as before: a
lock held by another connection (another process: the CLI) or thread never blocks the
loop, and a batch whose transaction fails is written again on the thread path, one item
per transaction, so only the item that broke it fails.

That connection takes the tickets it wrote or read under the write lock from what it
knows instead of reading them again (``store/known_tickets.py``), and only while nothing
else can have changed them: a commit by any other connection (a worker thread's,
another process's), a rolled-back transaction or a change it does not record makes it
read the database again."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text

from tickethub.domain.actors import Actor, Role
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket, TicketDraft
from tickethub.errors import IllegalTransition, WouldBlock
from tickethub.server.runtime import HubRuntime
from tickethub.services.ports import UnitOfWork
from tickethub.services.ticket_writes import Asked, WriteBatch
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


# -- what the connection knows of tickets (store/known_tickets.py) ---------------------

@pytest.fixture
def ticket_reads(hub: HubRuntime) -> list[str]:
    """The statements that read whole tickets, as they run."""
    reads: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "tickets.title" in statement:
            reads.append(statement)

    event.listen(_store(hub).engine, "before_cursor_execute", seen)
    return reads


def _ask_now(hub: HubRuntime, title: str, kind: Kind = Kind.QUESTION, **draft: Any
             ) -> Ticket:
    """Asked on the event loop's connection, as the hub's doors do."""
    item = hub.tickets._ask_item(AGENT, TicketDraft(kind, title, **draft), None, False)
    [asked] = hub.tickets._writer.write_now([item])
    assert isinstance(asked, Asked)
    return asked.ticket


def _answer_now(hub: HubRuntime, ticket_id: int, text: str) -> Ticket | Exception:
    item = hub.tickets._answer_item(ALICE, ticket_id, text, None, "api", None)
    [result] = hub.tickets._writer.write_now([item])
    return result  # type: ignore[no-any-return]


def test_an_answer_to_a_ticket_just_asked_reads_nothing(hub: HubRuntime,
                                                         ticket_reads: list[str]) -> None:
    asked = [_ask_now(hub, f"q{i}") for i in range(3)]
    ticket_reads.clear()
    for ticket in asked:
        answered = _answer_now(hub, ticket.id, "yes")
        assert isinstance(answered, Ticket)
        assert answered.status is Status.ANSWERED and answered.version == 2
    assert ticket_reads == []
    for ticket in asked:  # and what was written is what is stored
        stored = hub.tickets.get(ticket.id, ALICE)
        assert stored.status is Status.ANSWERED and stored.answer is not None
        assert stored.answer.text == "yes" and stored.version == 2


def test_a_commit_by_another_connection_is_read_back(hub: HubRuntime, db: Path,
                                                     ticket_reads: list[str]) -> None:
    """The CLI in another process (here: another connection) cancels a ticket the loop's
    connection knows as open: the answer sees it cancelled and is refused."""
    ticket = _ask_now(hub, "will be cancelled")
    other = sqlite3.connect(db)
    with other:
        other.execute("UPDATE tickets SET status = 'cancelled', version = version + 1 "
                      "WHERE id = ?", (ticket.id,))
    other.close()
    ticket_reads.clear()
    refused = _answer_now(hub, ticket.id, "too late")
    assert isinstance(refused, IllegalTransition)
    assert len(ticket_reads) == 1
    assert hub.tickets.get(ticket.id, ALICE).status is Status.CANCELLED


def test_a_write_on_a_worker_thread_is_read_back(hub: HubRuntime) -> None:
    """A door in a worker thread writes on a pooled connection (``store.write``)."""
    ticket = _ask_now(hub, "first title")
    hub.tickets.answer(ALICE, ticket.id, "from a thread", None, "web")  # pooled connection
    refused = _answer_now(hub, ticket.id, "again")
    assert isinstance(refused, IllegalTransition)  # answered already: not open any more
    stored = hub.tickets.get(ticket.id, ALICE)
    assert stored.answer is not None and stored.answer.text == "from a thread"


def test_a_rolled_back_transaction_forgets_everything(hub: HubRuntime,
                                                      ticket_reads: list[str]) -> None:
    ticket = _ask_now(hub, "known")
    with pytest.raises(RuntimeError, match="boom"), _store(hub).write_now():
        raise RuntimeError("boom")
    ticket_reads.clear()
    assert isinstance(_answer_now(hub, ticket.id, "yes"), Ticket)
    assert len(ticket_reads) == 1  # read again


def test_a_deadline_in_another_zone_is_read_back_in_utc(hub: HubRuntime) -> None:
    """What is kept must be what a read returns: a deadline given at +02:00 is stored
    (and read) in UTC, so that ticket is not kept as asked."""
    due = datetime.now(UTC).astimezone(timezone(timedelta(hours=2))) + timedelta(days=1)
    ticket = _ask_now(hub, "with a deadline", due_at=due)
    answered = _answer_now(hub, ticket.id, "yes")
    assert isinstance(answered, Ticket)
    assert answered.due_at == due and answered.due_at is not None
    assert answered.due_at.utcoffset() == timedelta(0)


def test_write_now_still_refuses_when_the_lock_is_held_elsewhere(hub: HubRuntime,
                                                                 db: Path) -> None:
    ticket = _ask_now(hub, "known")
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(WouldBlock):
            _answer_now(hub, ticket.id, "blocked")
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert isinstance(_answer_now(hub, ticket.id, "yes"), Ticket)


def test_what_a_caller_changes_in_its_own_values_changes_nothing_kept(
        hub: HubRuntime) -> None:
    """An asker that goes on changing the dict it proposed (a personal agent reuses its
    tool's arguments) changes neither what is stored nor what the next write starts
    from, nor does a waiter that changes the state it was handed."""
    arguments = {"add": ["done"]}
    ticket = _ask_now(hub, "approve me", Kind.APPROVAL,
                      proposal={"tool": "label", "arguments": arguments})
    arguments.clear()  # the asker's own dict, after the ask
    item = hub.tickets._approve_item(ALICE, ticket.id, None, None, "web", None)
    [approved] = hub.tickets._writer.write_now([item])
    assert isinstance(approved, Ticket) and approved.status is Status.APPROVED
    expected = {"tool": "label", "arguments": {"add": ["done"]}}
    assert approved.proposal == expected
    assert approved.answer is not None and approved.answer.data == expected
    approved.answer.data["arguments"].clear()  # a waiter changing what it was handed
    commented = _answer_now(hub, ticket.id, "too late")  # refused: from a clean state
    assert isinstance(commented, IllegalTransition)
    stored = hub.tickets.get(ticket.id, ALICE)
    assert stored.proposal == expected
    assert stored.answer is not None and stored.answer.data == expected
