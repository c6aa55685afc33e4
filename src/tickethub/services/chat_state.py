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

from datetime import datetime
from typing import Any, Protocol

from tickethub.domain.chat import ConversationChange as ConversationChange
from tickethub.domain.chat import ConversationRecord as ConversationRecord
from tickethub.domain.chat import InboxItem as InboxItem
from tickethub.domain.chat import ThreadSnapshot as ThreadSnapshot


class ChatState(Protocol):
    def receive(self, thread: str, transport: str, event_id: str, sender: str, body: str,
                data: dict[str, Any], at: datetime) -> InboxItem | None:
        """Queue a message; ``None`` when ``(transport, event_id)`` was already received
        (a platform retry)."""
        ...

    def snapshot(self, thread: str) -> ThreadSnapshot: ...

    def pending_threads(self, transport: str) -> list[str]:
        """The threads with messages of ``transport`` still to handle, in the order of
        their oldest such message (received by any process, or left by one that
        stopped)."""
        ...

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

    def sync_token(self, account: str) -> str | None:
        """Where the chat account ``account`` (e.g. ``matrix:@bot:example.org``) last
        stopped reading its platform's event stream; ``None`` before its first read."""
        ...

    def save_sync_token(self, account: str, token: str, at: datetime) -> None:
        """Remember ``token`` as where ``account`` goes on reading after a restart."""
        ...
