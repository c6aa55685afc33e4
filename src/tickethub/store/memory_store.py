"""The in-memory ``Store``: the fake of the store port (``services.ports.Store``), made
of dicts and lists, for tests and for plugin authors who want a hub without a database.

It keeps the contracts the SQL stores keep (``tests/store/test_store_contract_*.py``
run the same tests on all three):

* ``write()`` is a transaction: everything it changed is undone if it raises
  (an undo log, not a copy of the state); ``read()`` sees only committed work of other
  threads. One lock orders all transactions, so event ``seq`` order is commit order, as
  PostgreSQL's advisory lock makes it there.
* ``batch()`` groups one thread's transactions into one, as ``SqlStore.batch`` does:
  inside it ``write()`` is a savepoint and ``read()`` sees the batch's writes.
* Ids and seqs ascend and are never handed out twice (a rolled-back id is not reused,
  as with PostgreSQL's sequences).
* What goes in comes out as the database gives it back: JSON values are copied through
  ``json_codec`` (so a tuple comes back a list, and nobody shares a dict with the
  store), datetimes must be aware and come back in UTC (a naive one is a ``ValueError``).
* Unique keys (an idempotency key per creator, a message's outside id per channel, an
  actor's name, a token hash, a delivery key) and references (a message's ticket, a
  ticket's parent) raise ``ConstraintViolation`` where SQL raises an ``IntegrityError``.

Covered: the core unit of work (tickets, messages, events, actors and tokens,
deliveries and cursors, webhooks), read marks and saved views (``memory_web_marks``),
passwords, sessions and sign-in links (``memory_sessions``), and every side store that
takes a ``SqlStore``: Agent Protocol records (``memory_ap``), chat state
(``memory_chat``), mail state (``memory_mail``), the GitHub channel's state
(``memory_github``), personal agents (``memory_agents``) and the inbox reader
(``memory_inbox``). A side store keeps its tables in ``MemoryState.table(name)`` and
writes through the ``Changes`` of ``transaction()``, so it joins batches and rolls back
with everything else.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tickethub.store.memory_records import (
    MemoryActorRepository,
    MemoryDeliveryRepository,
    MemoryEventLog,
    MemoryMessageRepository,
    MemoryWebhookRepository,
)
from tickethub.store.memory_state import Changes, ConstraintViolation, MemoryState
from tickethub.store.memory_tickets import MemoryTicketRepository

__all__ = ["ConstraintViolation", "MemoryStore", "MemoryUnitOfWork"]


class MemoryUnitOfWork:
    """The repositories of one transaction over the shared state."""

    def __init__(self, state: MemoryState, changes: Changes) -> None:
        # What a side store joining this transaction builds its repository on
        # (``MemoryApStore.join``).
        self.state, self.changes = state, changes
        self.tickets = MemoryTicketRepository(state, changes)
        self.messages = MemoryMessageRepository(state, changes)
        self.events = MemoryEventLog(state, changes)
        self.actors = MemoryActorRepository(state, changes)
        self.deliveries = MemoryDeliveryRepository(state, changes)
        self.webhooks = MemoryWebhookRepository(state, changes)


class MemoryStore:
    """Transactions over one ``MemoryState``, one at a time (one lock, re-entrant for
    the thread that holds it)."""

    def __init__(self) -> None:
        self.state = MemoryState()
        self._lock = threading.RLock()
        self._local = threading.local()

    def _open(self) -> Changes | None:
        changes: Changes | None = getattr(self._local, "changes", None)
        return changes

    @contextmanager
    def batch(self) -> Iterator[None]:
        if self._open() is not None:
            yield  # already in a batch or transaction: join it
            return
        with self.transaction():
            yield

    @contextmanager
    def write(self) -> Iterator[MemoryUnitOfWork]:
        with self.transaction() as changes:
            yield MemoryUnitOfWork(self.state, changes)

    @contextmanager
    def read(self) -> Iterator[MemoryUnitOfWork]:
        with self.transaction() as changes:
            yield MemoryUnitOfWork(self.state, changes)

    @contextmanager
    def transaction(self) -> Iterator[Changes]:
        """A transaction, or a savepoint of the one this thread has open; for the side
        stores kept in this state (``memory_web_marks``), which change it through the
        ``Changes`` given."""
        outer = self._open()
        if outer is not None:
            mark = outer.mark()
            try:
                yield outer
            except BaseException:
                outer.roll_back_to(mark)
                raise
            return
        with self._lock:
            changes = Changes()
            self._local.changes = changes
            try:
                yield changes
            except BaseException:
                changes.roll_back_to(0)
                raise
            finally:
                self._local.changes = None

    def analyze(self) -> None:
        """Nothing to do: there is no query planner (``SqlStore.analyze``)."""
