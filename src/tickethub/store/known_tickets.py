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

Memory is bounded: the 10,000 tickets seen last, 16 MB in all at most (weighed roughly:
their text and JSON values); a ticket whose JSON values hold hundreds of items is not
kept (weighing it would cost about what reading it does).

SQLite only: a connection of its own (``SqlStore.write_now``) and the data version make
it exact. On PostgreSQL rows are read with ``FOR UPDATE`` as before.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace
from datetime import UTC
from typing import Any

from tickethub.domain.tickets import Ticket

KNOWN_TICKETS = "tickethub.known_tickets"  # its key in the connection's ``info``
LIMIT = 10_000  # tickets kept, the most recently seen...
LIMIT_BYTES = 16 * 1024 * 1024  # ...as long as they weigh no more than this in all
# A ticket is kept only if its JSON values (schema, proposal, answer data, refs) hold at
# most this many items: weighing one must cost little next to reading it.
_JSON_ITEMS = 256
_BASE_WEIGHT = 1024  # a ticket's object and its fixed fields, roughly


class KnownTickets:
    """What one connection knows, kept in its ``info`` under ``KNOWN_TICKETS``: used
    between ``begin`` and ``committed`` (or ``rolled_back``) of each of its write
    transactions, on one thread at a time (the connection's)."""

    def __init__(self, limit: int = LIMIT, limit_bytes: int = LIMIT_BYTES) -> None:
        self._states: OrderedDict[int, tuple[Ticket, int]] = OrderedDict()  # and weight
        self._limit = limit
        self._limit_bytes = limit_bytes
        self._bytes = 0
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
            self._clear()
            self._data_version = version
        self._pending = {}
        self.active = True

    def get(self, ticket_id: int) -> Ticket | None:
        """The ticket as stored now, if known (inside a checked transaction only)."""
        known = self._states.get(ticket_id) if self.active else None
        return None if known is None else known[0]

    def saw(self, ticket: Ticket) -> None:
        """``ticket`` is its stored state once this transaction commits."""
        self._pending[ticket.id] = ticket

    def forget(self, ticket_id: int) -> None:
        """This transaction changed the ticket in a way not recorded here."""
        self._pending[ticket_id] = None

    def committed(self) -> None:
        states = self._states
        for ticket_id, ticket in self._pending.items():
            dropped = states.pop(ticket_id, None)
            if dropped is not None:
                self._bytes -= dropped[1]
            kept = None if ticket is None else _detached(ticket)
            if kept is not None:
                states[ticket_id] = kept
                self._bytes += kept[1]
        while len(states) > self._limit or self._bytes > self._limit_bytes:
            self._bytes -= states.popitem(last=False)[1][1]
        self._pending = {}
        self.active = False

    def rolled_back(self) -> None:
        """Nothing of the transaction is stored; what it relied on may be wrong (a row
        that did not match): start again from the database."""
        self._clear()
        self._pending = {}
        self.active = False

    def _clear(self) -> None:
        self._states.clear()
        self._bytes = 0


def _detached(ticket: Ticket) -> tuple[Ticket, int] | None:
    """``ticket`` with copies of its JSON values, and roughly the bytes it holds; None
    for one not kept (a time in another zone than UTC, or JSON values too large to copy
    cheaply: it is read from the database when needed).

    Copies, because those values came from callers (an ask's proposal is the asker's
    own dict) and go back to them (an answer's new state shares its ``refs`` with the
    state before): one that changes a dict it holds must not change what is kept here,
    as it never changed what the database holds. (An empty ``refs`` is not copied: a
    ``Ticket`` is frozen, and nothing changes one's values in place.)"""
    answer = ticket.answer
    # A time given in another zone (a deadline, a deferral) is read back in UTC: a
    # ticket holding one is not what a read gives, so it is not kept.
    for at in (ticket.due_at, ticket.next_attention_at, ticket.created_at,
               ticket.updated_at, None if answer is None else answer.at):
        if at is not None and at.tzinfo is not UTC:
            return None
    weight = _BASE_WEIGHT + len(ticket.title) + len(ticket.body)
    if answer is not None:
        weight += len(answer.text or "")
    if (ticket.response_schema is None and ticket.proposal is None and not ticket.refs
            and (answer is None or answer.data is None)):
        return ticket, weight  # nothing to copy (most tickets: a question, a text answer)
    budget = [_JSON_ITEMS]
    copies = []
    for value in (ticket.response_schema, ticket.proposal, ticket.refs,
                  None if answer is None else answer.data):
        copied = _json_copy(value, budget)
        if copied is None:
            return None
        copies.append(copied[0])
        weight += copied[1]
    schema, proposal, refs, data = copies
    if answer is not None:
        answer = replace(answer, data=data)
    return replace(ticket, response_schema=schema, proposal=proposal, refs=refs,
                   answer=answer), weight


def _json_copy(value: Any, budget: list[int]) -> tuple[Any, int] | None:
    """A copy of a JSON value as the database gives it back, and roughly its bytes,
    walking at most ``budget[0]`` items in all (None past them)."""
    budget[0] -= 1
    if budget[0] < 0:
        return None
    if isinstance(value, str):
        return value, 50 + len(value)
    if isinstance(value, dict):
        copy: dict[Any, Any] = {}
        weight = 64
        for key, item in value.items():
            copied = _json_copy(item, budget)
            if copied is None:
                return None
            copy[key] = copied[0]
            weight += 50 + len(str(key)) + copied[1]
        return copy, weight
    if isinstance(value, list | tuple):
        items = []
        weight = 64
        for item in value:
            copied = _json_copy(item, budget)
            if copied is None:
                return None
            items.append(copied[0])
            weight += copied[1]
        return items, weight  # a tuple too: stored as JSON, it is read back as a list
    return value, 32  # a number, a boolean, null
