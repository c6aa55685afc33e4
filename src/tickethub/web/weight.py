"""The weight of a ticket in a list: what makes a row stand out."""

from __future__ import annotations

from datetime import datetime, timedelta

from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket

SOON = timedelta(hours=1)
# An agent that asks a question or for an approval stops until a person decides; a task
# or an FYI (info) does not stop it.
BLOCKING_KINDS = frozenset({Kind.APPROVAL, Kind.QUESTION})


def weight(ticket: Ticket, now: datetime) -> list[str]:
    """Why a ticket stands out, most pressing first: ``overdue``, ``soon`` (due within
    an hour), ``blocking`` (an approval or question that is open or in progress: its agent
    waits on it). Resolved tickets weigh nothing; a snoozed one does not block."""
    if not ticket.waiting:
        return []
    out = []
    if ticket.due_at is not None:
        if ticket.due_at <= now:
            out.append("overdue")
        elif ticket.due_at - now <= SOON:
            out.append("soon")
    if ticket.kind in BLOCKING_KINDS and ticket.status is not Status.DEFERRED:
        out.append("blocking")
    return out
