"""The people's inbox read from memory: the ``InboxReader`` port (``services/inbox.py``)
over a ``MemoryStore``, with ``store/inbox_queries.py``'s contracts
(``tests/store/test_store_contract_inbox.py`` runs on every store).

The filters are ``InboxQuery.matches`` plus what only the store knows: ``q`` also finds
a ticket by one of its messages, and ``readable_by`` is ``domain.visibility``'s rule.
Orders: ``newest`` is id descending; ``urgent`` is due date ascending, undated last,
then id descending; a cursor is the last row of the page before."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from tickethub.domain.inbox import InboxQuery
from tickethub.domain.tickets import Ticket
from tickethub.store.memory_state import MemoryState, TicketRow
from tickethub.store.memory_store import MemoryStore
from tickethub.store.memory_tickets import readable_row


def _matches(state: MemoryState, row: TicketRow, query: InboxQuery) -> bool:
    ticket = row.ticket
    if not replace(query, q=None).matches(ticket):
        return False
    if query.readable_by is not None and not readable_row(state, row, query.readable_by):
        return False
    if not query.q:
        return True
    needle = query.q.lower()
    return needle in ticket.title.lower() or needle in ticket.body.lower() or any(
        m.ticket_id == ticket.id and needle in m.body.lower()
        for m in state.messages.values())


def _after(ticket: Ticket, query: InboxQuery) -> bool:
    """Whether ``ticket`` comes after the cursor in the query's order."""
    cursor = query.cursor
    if cursor is None:
        return True
    if query.sort == "newest":
        return ticket.id < cursor.id
    if cursor.due_at is None:
        return ticket.due_at is None and ticket.id < cursor.id
    return ticket.due_at is None or ticket.due_at > cursor.due_at or (
        ticket.due_at == cursor.due_at and ticket.id < cursor.id)


def _urgent(ticket: Ticket) -> tuple[bool, datetime, int]:
    return ticket.due_at is None, ticket.due_at or _NEVER, -ticket.id


_NEVER = datetime.min.replace(tzinfo=UTC)


class MemoryInboxReader:
    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def page(self, query: InboxQuery) -> list[Ticket]:
        with self._store.read() as uow:
            state = self._store.state
            found = [row.ticket for row in state.tickets.values()
                     if _matches(state, row, query) and _after(row.ticket, query)]
            found.sort(key=_urgent if query.sort == "urgent" else lambda t: -t.id)
            ids = [t.id for t in found[:query.limit]]
            tickets = uow.tickets.get_many(ids)
            return [tickets[i] for i in ids]

    def count(self, query: InboxQuery) -> int:
        with self._store.read():
            state = self._store.state
            return sum(1 for row in state.tickets.values() if _matches(state, row, query))
