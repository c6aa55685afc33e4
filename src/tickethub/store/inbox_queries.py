"""SQL for the people's inbox (the ``InboxReader`` port): filters plus keyset pages."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, and_, func, or_, select

from tickethub.domain.inbox import InboxQuery
from tickethub.domain.tickets import Ticket
from tickethub.store.sql_store import SqlStore
from tickethub.store.tables import messages, ticket_labels, tickets
from tickethub.store.ticket_repository import like_pattern, row_to_ticket
from tickethub.store.visibility import readable_by


def _filtered(stmt: Select[Any], query: InboxQuery) -> Select[Any]:
    statuses = query.statuses
    if statuses:
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


def _after_cursor(stmt: Select[Any], query: InboxQuery) -> Select[Any]:
    cursor = query.cursor
    if query.sort == "newest":
        if cursor is not None:
            stmt = stmt.where(tickets.c.id < cursor.id)
        return stmt.order_by(tickets.c.id.desc())
    due, ident = tickets.c.due_at, tickets.c.id
    if cursor is not None:
        if cursor.due_at is None:
            stmt = stmt.where(due.is_(None), ident < cursor.id)
        else:
            stmt = stmt.where(or_(
                due > cursor.due_at,
                and_(due == cursor.due_at, ident < cursor.id),
                due.is_(None),
            ))
    return stmt.order_by(due.is_(None), due, ident.desc())


class SqlInboxReader:
    def __init__(self, store: SqlStore) -> None:
        self._store = store

    def page(self, query: InboxQuery) -> list[Ticket]:
        stmt = _after_cursor(_filtered(select(tickets), query), query).limit(query.limit)
        with self._store.read() as uow:
            return [row_to_ticket(row) for row in uow.connection.execute(stmt)]

    def count(self, query: InboxQuery) -> int:
        stmt = _filtered(select(func.count()).select_from(tickets), query)
        with self._store.read() as uow:
            return int(uow.connection.execute(stmt).scalar() or 0)
