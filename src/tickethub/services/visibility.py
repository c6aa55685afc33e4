"""The read policy (``domain.visibility``) applied inside a transaction: the one check
services make before handing a ticket, its messages or its task to an actor."""

from __future__ import annotations

from typing import Protocol

from tickethub.domain.actors import Actor
from tickethub.domain.visibility import can_read
from tickethub.errors import NotFound


class _Readable(Protocol):
    def readable(self, ticket_id: int, name: str) -> bool: ...


class _Ticketish(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def created_by(self) -> str: ...
    @property
    def path(self) -> str: ...


def readable(tickets: _Readable, actor: Actor, ticket: _Ticketish,
             assignee: str | None = None) -> bool:
    """Whether ``actor`` reads ``ticket``; asks the store only when its creator and
    ``assignee`` alone do not decide."""
    return can_read(actor, ticket.created_by, assignee, ticket.path.count("/") > 2,
                    lambda: tickets.readable(ticket.id, actor.name))


def not_found(ticket_id: int, field: str = "id") -> NotFound:
    """What an unreadable ticket answers: the same as an unknown id."""
    return NotFound(f"ticket {ticket_id} does not exist", field=field)
