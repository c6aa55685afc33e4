"""``domain.visibility`` as SQL: the one filter every list, tree, page and event read
adds for a reader that does not read everything.

A ticket is readable by ``name`` when it was created by ``name``, is assigned to
``name``, or lies below a ticket ``name`` created: an ancestor's materialized path is a
prefix of the ticket's (``/1/5/`` of ``/1/5/9/``), so the subtree test is a path-prefix
``LIKE`` against the reader's own tickets (found through ``ix_tickets_created_by``),
asked only for the rows the two plain tests leave out.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, and_, exists, or_, select

from tickethub.store.tables import events, tickets

_owned = tickets.alias("owned")


def readable_by(name: str, ticket: Any = tickets) -> ColumnElement[bool]:
    """True for the rows of ``ticket`` (the tickets table or an alias) ``name`` reads."""
    return or_(
        ticket.c.created_by == name,
        ticket.c.assignee == name,
        and_(ticket.c.depth > 0, exists(
            select(_owned.c.id).where(
                _owned.c.created_by == name,
                _owned.c.depth < ticket.c.depth,
                ticket.c.path.like(_owned.c.path.concat("%")),
            )
        )),
    )


def event_readable_by(name: str) -> ColumnElement[bool]:
    """True for the event rows about a ticket ``name`` reads."""
    return exists(select(tickets.c.id).where(tickets.c.id == events.c.ticket_id,
                                             readable_by(name)))
