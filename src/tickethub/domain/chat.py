"""Records of chat conversations that the store keeps (``services.chat_state`` is
the port): received messages, conversations bound to threads, a thread as read."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class InboxItem:
    """One chat message as received. ``thread`` is the thread key
    ``transport:room:root``; ``seq`` orders a thread's messages."""

    seq: int
    thread: str
    transport: str
    event_id: str
    sender: str
    body: str
    data: dict[str, Any]
    status: str  # pending | done
    route: str | None
    received_at: datetime


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    """A conversation bound to a thread and one participant; ``ticket_id`` is the ticket
    that carries it (its audit trail and its result)."""

    id: int
    ticket_id: int
    thread: str
    participant: str
    handler: str
    state: dict[str, Any]
    status: str  # open | ended
    due_at: datetime | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class ConversationChange:
    """A new or changed conversation to write with a commit; ``id=None`` adds one."""

    id: int | None
    ticket_id: int
    thread: str
    participant: str
    handler: str
    state: dict[str, Any]
    status: str
    due_at: datetime | None


@dataclass(frozen=True, slots=True)
class ThreadSnapshot:
    """A thread as read before handling: its version (the compare-and-set token), its
    open conversations and the oldest pending message (``None`` when all are done)."""

    thread: str
    version: int
    open: list[ConversationRecord] = field(default_factory=list)
    next_item: InboxItem | None = None
