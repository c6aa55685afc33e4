"""What the event loop's own SQLite write connection knows of tickets: the state each
had when this connection last read it under the write lock, or wrote it.

A group commit of answers reads the tickets it changes (``get_many(for_update=True)``)
before it writes them: a quarter of the transaction's time, for rows that, under load,
this same connection wrote or read a moment earlier. Those rows are kept here, and
``get_many`` takes them from here instead of reading them again, for as long as nothing
else can have changed them:

* every change of a ticket on this connection passes through ``SqlTicketRepository``,
  which records the new state (``saw``) or drops the ticket (``forget``); what a
  transaction records counts only once it commits (``committed``), and a transaction
  that rolls back drops everything known (``rolled_back``);
* every other connection's commit (the pool's connections in worker threads, the CLI in
  another process, a backup restore) changes SQLite's ``PRAGMA data_version`` as this
  connection sees it, and ``begin`` then drops everything known. It is read inside the
  transaction, after ``BEGIN IMMEDIATE`` took the write lock, so no other commit can
  slip in between the check and the writes that rely on it.

SQLite only: a connection of its own (``SqlStore.write_now``) and the data version make
it exact. On PostgreSQL rows are read with ``FOR UPDATE`` as before.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from tickethub.domain.tickets import Ticket

KNOWN_TICKETS = "tickethub.known_tickets"  # its key in the connection's ``info``
LIMIT = 10_000  # tickets kept, the most recently seen


class KnownTickets:
    def __init__(self, limit: int = LIMIT) -> None:
        self._states: OrderedDict[int, Ticket] = OrderedDict()
        self._limit = limit
        self._data_version: int | None = None
        self._pending: dict[int, Ticket | None] = {}
        self.active = False  # inside a transaction that ``begin`` checked

    def __len__(self) -> int:
        return len(self._states)

    def begin(self, driver_connection: Any) -> None:
        """Start of a write transaction on the connection (its write lock held): forget
        everything if another connection committed since the last one."""
        version = driver_connection.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:
            self._states.clear()
            self._data_version = version
        self._pending = {}
        self.active = True

    def get(self, ticket_id: int) -> Ticket | None:
        """The ticket as stored now, if known (inside a checked transaction only)."""
        return self._states.get(ticket_id) if self.active else None

    def saw(self, ticket: Ticket) -> None:
        """``ticket`` is its stored state once this transaction commits."""
        self._pending[ticket.id] = ticket

    def forget(self, ticket_id: int) -> None:
        """This transaction changed the ticket in a way not recorded here."""
        self._pending[ticket_id] = None

    def committed(self) -> None:
        states = self._states
        for ticket_id, ticket in self._pending.items():
            if ticket is None:
                states.pop(ticket_id, None)
            else:
                states[ticket_id] = ticket
                states.move_to_end(ticket_id)
        while len(states) > self._limit:
            states.popitem(last=False)
        self._pending = {}
        self.active = False

    def rolled_back(self) -> None:
        """Nothing of the transaction is stored; what it relied on may be wrong (a row
        that did not match): start again from the database."""
        self._states.clear()
        self._pending = {}
        self.active = False
