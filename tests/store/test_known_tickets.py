"""The event loop's SQLite write connection takes the tickets it wrote or read under the
write lock from what it knows instead of reading them again (``store/known_tickets.py``),
and only while nothing else can have changed them: a commit by any other connection (a
worker thread's, another process's), a rolled-back transaction or a change it does not
record makes it read the database again."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from tickethub.domain.actors import Actor, Role
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket, TicketDraft
from tickethub.errors import IllegalTransition, WouldBlock
from tickethub.server.runtime import HubRuntime
from tickethub.services.ticket_writes import Asked
from tickethub.settings import Settings
from tickethub.store.known_tickets import KnownTickets
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


@pytest.fixture
def ticket_reads(hub: HubRuntime) -> list[str]:
    """The statements that read whole tickets, as they run."""
    reads: list[str] = []
    store = hub.tickets._store
    assert isinstance(store, SqlStore)

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "tickets.title" in statement:
            reads.append(statement)

    event.listen(store.engine, "before_cursor_execute", seen)
    return reads


def _ask_now(hub: HubRuntime, title: str, **draft: Any) -> Ticket:
    """Asked on the event loop's connection, as the hub's doors do."""
    item = hub.tickets._ask_item(AGENT, TicketDraft(Kind.QUESTION, title, **draft), None,
                                 False)
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
    store = hub.tickets._store
    assert isinstance(store, SqlStore)
    with pytest.raises(RuntimeError, match="boom"), store.write_now():
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


_AT = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def _ticket(ticket_id: int, version: int = 1) -> Ticket:
    return Ticket(ticket_id, Kind.QUESTION, "t", "", Status.OPEN, "bot", _AT, _AT, version)


class _Driver:
    """A driver connection whose data version is set by the test."""

    def __init__(self) -> None:
        self.version = 1

    def execute(self, sql: str) -> Any:
        assert sql == "PRAGMA data_version"
        version = self.version

        class _Row:
            def fetchone(self) -> tuple[int]:
                return (version,)

        return _Row()


def test_known_tickets_keep_what_committed_and_drop_the_rest() -> None:
    known, driver = KnownTickets(limit=2), _Driver()
    assert known.get(1) is None  # outside a transaction: nothing
    known.begin(driver)
    known.saw(_ticket(1))
    assert known.get(1) is None  # not before it commits
    known.committed()
    known.begin(driver)
    assert known.get(1) == _ticket(1)
    known.forget(1)
    known.saw(_ticket(2))
    known.saw(_ticket(3))
    known.saw(_ticket(4))
    known.committed()
    assert len(known) == 2  # the limit: the most recent
    known.begin(driver)
    assert known.get(1) is None and known.get(2) is None and known.get(4) is not None
    known.rolled_back()
    known.begin(driver)
    assert len(known) == 0 and known.get(4) is None
    known.saw(_ticket(5))
    known.committed()
    driver.version = 2  # another connection committed
    known.begin(driver)
    assert known.get(5) is None and len(known) == 0
