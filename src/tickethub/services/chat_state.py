"""What the conversation engine keeps in the hub's database: an inbox of chat messages
per thread (deduplicated by the platform's event id, handled in arrival order), the
conversations bound to threads (each one a ticket), and the bot's own prompts.

The engine (``conversations/``) depends on the :class:`ChatState` port;
``store/chat_store.py`` implements it in SQL (tables from migration
``0012_chat_conversations``).

Ordering across processes rests on one compare-and-set: every thread has a row with a
``version``; :meth:`ChatState.commit` applies a handled message (its route, the
conversations it changed) only if the thread's version is still the one read before
handling. A process that loses the race reads again and finds the message done.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol


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


class ChatState(Protocol):
    def receive(self, thread: str, transport: str, event_id: str, sender: str, body: str,
                data: dict[str, Any], at: datetime) -> InboxItem | None:
        """Queue a message; ``None`` when ``(transport, event_id)`` was already received
        (a platform retry)."""
        ...

    def snapshot(self, thread: str) -> ThreadSnapshot: ...

    def commit(self, thread: str, expected_version: int, item_seq: int | None, route: str,
               changes: list[ConversationChange], at: datetime) -> list[int] | None:
        """Mark item ``item_seq`` done with its route and write ``changes``, if the
        thread is still at ``expected_version``. Returns the ids of the written
        conversations, or ``None`` when another handler got there first."""
        ...

    def conversation(self, conversation_id: int) -> ConversationRecord | None: ...

    def by_ticket(self, ticket_id: int) -> ConversationRecord | None: ...

    def open_for(self, participant: str) -> list[ConversationRecord]:
        """Open conversations of a participant in any thread, oldest first."""
        ...

    def due(self, now: datetime, limit: int) -> list[ConversationRecord]:
        """Open conversations whose ``due_at`` has passed."""
        ...

    def add_prompt(self, event_id: str, conversation_id: int, at: datetime) -> None:
        """Remember that the bot's message ``event_id`` asked for this conversation."""
        ...

    def prompt(self, event_id: str) -> int | None:
        """The conversation a bot prompt belongs to."""
        ...

    def items(self, thread: str) -> list[InboxItem]:
        """A thread's messages in order (for inspection and tests)."""
        ...
