"""Events: one row per change, written in the same transaction (an outbox).

``seq`` is monotonic, so any consumer can resume with ``since=<seq>`` and miss nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class EventType(StrEnum):
    TICKET_CREATED = "ticket.created"
    MESSAGE_POSTED = "message.posted"
    TICKET_ANSWERED = "ticket.answered"
    TICKET_TRANSITIONED = "ticket.transitioned"
    TICKET_ASSIGNED = "ticket.assigned"
    TICKET_LABELED = "ticket.labeled"
    TICKET_EXPIRED = "ticket.expired"
    TICKET_LINKED = "ticket.linked"  # a ref to the outside (e.g. a GitHub issue) was set


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event about to be appended; the log gives it its ``seq``."""

    type: EventType
    ticket_id: int
    ticket_path: str
    actor: str
    data: dict[str, Any]
    # The HTTP request that asked for it, when the write runs outside that request's
    # context (a group commit serving many); else the store takes the current one.
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class Event:
    seq: int
    type: EventType
    ticket_id: int
    ticket_path: str
    actor: str
    data: dict[str, Any]
    at: datetime
