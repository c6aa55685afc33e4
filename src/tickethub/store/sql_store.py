"""The SQL implementation of the ``Store`` port: one unit of work per transaction."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from sqlalchemy import Connection, Engine

from tickethub.errors import DatabaseUnavailable, WouldBlock
from tickethub.store.engine import WRITE_OPTION
from tickethub.store.known_tickets import KNOWN_TICKETS, KnownTickets
from tickethub.store.records import (
    SqlActorRepository,
    SqlDeliveryRepository,
    SqlEventLog,
    SqlMessageRepository,
    SqlWebhookRepository,
)
from tickethub.store.ticket_repository import SqlTicketRepository


class SqlUnitOfWork:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.tickets = SqlTicketRepository(connection)
        self.messages = SqlMessageRepository(connection)
        self.events = SqlEventLog(connection)
        self.actors = SqlActorRepository(connection)
        self.deliveries = SqlDeliveryRepository(connection)
        self.webhooks = SqlWebhookRepository(connection)


class SqlStore:
    """Transactions over an engine. On SQLite, writers queue on a process lock instead of
    spinning in SQLite's busy handler, which keeps write latency flat under load.

    ``batch()`` groups the transactions one thread opens into one: inside it, ``write()``
    is a savepoint of the batch's transaction (a failed write still changes nothing) and
    ``read()`` reads on the same connection (it sees the batch's writes); everything is
    committed when the batch ends. For bulk work by one thread (``mail ingest``): one
    commit per batch instead of one per change. Other threads are unaffected (on SQLite
    their writes wait for the batch)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._write_lock: Any = (
            threading.Lock() if engine.dialect.name == "sqlite" else nullcontext()
        )
        self._local = threading.local()
        self._inline: Connection | None = None  # ``write_now``'s own (the loop's thread)

    @contextmanager
    def batch(self) -> Iterator[None]:
        if getattr(self._local, "connection", None) is not None:
            yield  # already in a batch: join it
            return
        with self._write_lock, self.engine.connect() as connection:
            connection.execution_options(**{WRITE_OPTION: True})
            with connection.begin():
                self._local.connection = connection
                try:
                    yield
                finally:
                    self._local.connection = None

    @contextmanager
    def write(self) -> Iterator[SqlUnitOfWork]:
        batched = getattr(self._local, "connection", None)
        if batched is not None:
            with batched.begin_nested():
                yield SqlUnitOfWork(batched)
            return
        with self._write_lock, self.engine.connect() as connection:
            connection.execution_options(**{WRITE_OPTION: True})
            with connection.begin():
                yield SqlUnitOfWork(connection)

    @property
    def writes_now(self) -> bool:
        """Whether ``write_now`` can be tried (SQLite: an embedded database whose write
        lock is a quick local check)."""
        return self.engine.dialect.name == "sqlite"

    @contextmanager
    def write_now(self) -> Iterator[SqlUnitOfWork]:
        """``write()`` that never waits for the write lock: raises :class:`WouldBlock`
        (nothing begun) when another thread of this process holds it or, with a zero busy
        timeout for the ``BEGIN IMMEDIATE``, another connection (another process: the
        CLI) does. For the event loop's own commits (``group_commit``), which must not
        block the loop. SQLite only (``writes_now``).

        It writes on a connection of its own, kept open and not taken from the pool: no
        pool checkout (which could wait for a free connection), no new connection's
        setup, and its zero busy timeout set once. Inside the transaction nothing waits
        on a lock either (it holds the write lock); a statement that still finds the
        database busy fails, and the caller writes the batch on a thread instead."""
        if not self.writes_now or getattr(self._local, "connection", None) is not None:
            raise WouldBlock("not an SQLite store, or inside a batch")
        if not self._write_lock.acquire(blocking=False):
            raise WouldBlock("another thread holds the write lock")
        try:
            connection = self._inline_connection()
            try:
                transaction = connection.begin()
            except DatabaseUnavailable as exc:  # SQLITE_BUSY: another process writes
                raise WouldBlock("the database is locked by another connection") from exc
            known: KnownTickets = connection.info[KNOWN_TICKETS]
            try:
                with transaction:
                    known.begin(connection.connection.driver_connection)
                    yield SqlUnitOfWork(connection)
            except BaseException:
                known.rolled_back()
                raise
            else:
                known.committed()
            finally:
                if connection.invalidated:  # the driver connection broke: a new one next
                    self._close_inline()
        finally:
            self._write_lock.release()

    def _inline_connection(self) -> Connection:
        connection = self._inline
        if connection is None:
            connection = self.engine.connect()
            connection.execution_options(**{WRITE_OPTION: True})
            # On the driver's connection: through ``connection`` it would begin a
            # transaction, under the usual busy timeout.
            connection.connection.driver_connection.execute(  # type: ignore[union-attr]
                "PRAGMA busy_timeout=0")
            # What it writes and reads under the write lock, kept (known_tickets.py).
            connection.info[KNOWN_TICKETS] = KnownTickets()
            self._inline = connection
        return connection

    def _close_inline(self) -> None:
        connection, self._inline = self._inline, None
        if connection is not None:
            connection.invalidate()  # its zero busy timeout must not go back to the pool
            connection.close()

    def close(self) -> None:
        """Close the connection ``write_now`` keeps (before the engine is disposed). A
        write still running elsewhere is given a few seconds; past them the connection
        is left to the garbage collector rather than hang the shutdown."""
        if self._inline is not None and self._write_lock.acquire(timeout=5):
            try:
                self._close_inline()
            finally:
                self._write_lock.release()

    @contextmanager
    def read(self) -> Iterator[SqlUnitOfWork]:
        batched = getattr(self._local, "connection", None)
        if batched is not None:
            yield SqlUnitOfWork(batched)
            return
        with self.engine.connect() as connection, connection.begin():
            yield SqlUnitOfWork(connection)

    def analyze(self) -> None:
        """Refresh the query planner's statistics. SQLite keeps none unless asked, and
        without them it reads a page of the inbox (50 newest waiting tickets) through the
        ``status`` index, sorting every waiting ticket first; with them it walks the ids
        newest first and stops at 50. PostgreSQL's autovacuum keeps its own statistics."""
        if self.engine.dialect.name == "sqlite":
            with self.write() as uow:
                uow.connection.exec_driver_sql("ANALYZE")
            # An SQLite connection reads the statistics when it opens (ANALYZE on another
            # does not reach it): the connections already open, kept by the pool and by
            # ``write_now``, are closed, so every later query is planned with them. (Not
            # an in-memory database: it lives only as long as its connections.)
            if self.engine.url.database in (None, "", ":memory:"):
                return
            if self._write_lock.acquire(timeout=5):
                try:
                    self._close_inline()
                finally:
                    self._write_lock.release()
            self.engine.dispose()
