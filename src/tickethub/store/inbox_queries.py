"""SQL for the people's inbox (the ``InboxReader`` port): filters plus keyset pages.

"Most urgent first" (due date ascending, undated last, then newest) is not one sorted
scan: that sorts every waiting ticket for each page (100 ms at 100,000 tickets). It is a
``UNION ALL`` of small scans, one per status and per part of the order (dated after the
cursor, dated on the cursor's due date, undated), each read in the order of
``ix_tickets_status_due_id`` (status, due_at, id DESC) and stopped at the page's limit;
only their merge (at most branches x limit rows) is sorted."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Select, and_, func, or_, select, union_all

from tickethub.domain.inbox import InboxQuery
from tickethub.domain.status import Status
from tickethub.domain.tickets import Ticket
from tickethub.store.sql_store import SqlStore
from tickethub.store.tables import messages, ticket_labels, tickets
from tickethub.store.ticket_repository import like_pattern
from tickethub.store.ticket_rows import row_to_ticket
from tickethub.store.visibility import readable_by


def _filtered(stmt: Select[Any], query: InboxQuery, by_status: bool = True) -> Select[Any]:
    statuses = query.statuses
    if statuses and by_status:
        stmt = stmt.where(tickets.c.status.in_([s.value for s in statuses]))
    if query.view == "me":
        stmt = stmt.where(tickets.c.assignee == query.me)
    elif query.view == "team":
        stmt = stmt.where(or_(tickets.c.assignee.is_(None), tickets.c.assignee == query.me))
    if query.kind is not None:
        stmt = stmt.where(tickets.c.kind == query.kind.value)
    if query.assignee:
        stmt = stmt.where(tickets.c.assignee == query.assignee)
    if query.agent:
        stmt = stmt.where(tickets.c.created_by == query.agent)
    if query.label:
        stmt = stmt.where(tickets.c.id.in_(
            select(ticket_labels.c.ticket_id)
            .where(ticket_labels.c.label == query.label.strip().lower())))
    if query.readable_by is not None:
        stmt = stmt.where(readable_by(query.readable_by))
    if query.q:
        pattern = like_pattern(query.q)
        stmt = stmt.where(or_(
            func.lower(tickets.c.title).like(pattern, escape="\\"),
            func.lower(tickets.c.body).like(pattern, escape="\\"),
            # One pass over the messages, not one lookup per ticket: with planner
            # statistics SQLite may judge the per-ticket index unselective and scan
            # every message for every ticket.
            tickets.c.id.in_(select(messages.c.ticket_id).where(
                func.lower(messages.c.body).like(pattern, escape="\\"))),
        ))
    return stmt


def _newest(query: InboxQuery) -> Select[Any]:
    stmt = _filtered(select(tickets), query)
    if query.cursor is not None:
        stmt = stmt.where(tickets.c.id < query.cursor.id)
    return stmt.order_by(tickets.c.id.desc()).limit(query.limit)


def _urgent(query: InboxQuery) -> Select[Any]:
    """One branch per status and part of the order after the cursor, each ordered as
    the index (``due_at, id DESC``: an undated branch orders by its all-NULL ``due_at``
    too, so the index still serves it) and limited; the merge is sorted and limited."""
    due, ident, cursor = tickets.c.due_at, tickets.c.id, query.cursor
    parts: list[ColumnElement[bool]]  # the rest of the order, as conditions on (due_at, id)
    if cursor is None:
        parts = [due.is_not(None), due.is_(None)]
    elif cursor.due_at is not None:
        parts = [and_(due == cursor.due_at, ident < cursor.id), due > cursor.due_at,
                 due.is_(None)]
    else:
        parts = [and_(due.is_(None), ident < cursor.id)]
    base = _filtered(select(tickets), query, by_status=False)
    branches = [
        base.where(tickets.c.status == status.value, part)
        .order_by(due, ident.desc()).limit(query.limit).subquery()
        for status in (query.statuses or tuple(Status)) for part in parts]
    merged = union_all(*(select(branch) for branch in branches)).subquery()
    return (select(merged)
            .order_by(merged.c.due_at.is_(None), merged.c.due_at, merged.c.id.desc())
            .limit(query.limit))


def page_statement(query: InboxQuery) -> Select[Any]:
    """The SELECT of one inbox page (its rows are ``tickets`` rows)."""
    return _urgent(query) if query.sort == "urgent" else _newest(query)


class SqlInboxReader:
    def __init__(self, store: SqlStore) -> None:
        self._store = store

    def page(self, query: InboxQuery) -> list[Ticket]:
        stmt = page_statement(query)
        with self._store.read() as uow:
            return [row_to_ticket(row) for row in uow.connection.execute(stmt)]

    def count(self, query: InboxQuery) -> int:
        stmt = _filtered(select(func.count()).select_from(tickets), query)
        with self._store.read() as uow:
            return int(uow.connection.execute(stmt).scalar() or 0)
