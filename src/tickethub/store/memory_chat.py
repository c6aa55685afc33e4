"""The conversation engine's state in memory: the ``ChatState`` port
(``services/chat_state.py``) over a ``MemoryStore``, with ``store/chat_store.py``'s
contracts (``tests/store/test_store_contract_chat.py`` runs on every store).

Tables: ``chat_threads`` (thread → version), ``chat_inbox`` (seq → item, with
``chat_events`` holding each ``(transport, event id)`` once), ``chat_conversations`` (id
→ record; one per ticket, in ``chat_tickets``) and ``chat_prompts`` (event id →
conversation id), ``chat_sync_tokens`` (account → token)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from tickethub.domain.chat import (
    ConversationChange,
    ConversationRecord,
    InboxItem,
    ThreadSnapshot,
)
from tickethub.store.memory_state import ConstraintViolation, as_json, as_utc
from tickethub.store.memory_store import MemoryStore


def _item(item: InboxItem) -> InboxItem:
    return replace(item, data=as_json(item.data))


def _conversation(record: ConversationRecord) -> ConversationRecord:
    return replace(record, state=as_json(record.state))


class MemoryChatState:
    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        state = store.state
        self._threads: dict[str, int] = state.table("chat_threads")
        self._inbox: dict[int, InboxItem] = state.table("chat_inbox")
        self._events: dict[tuple[str, str], int] = state.table("chat_events")
        self._conversations: dict[int, ConversationRecord] = state.table(
            "chat_conversations")
        self._tickets: dict[int, int] = state.table("chat_tickets")
        self._prompts: dict[str, int] = state.table("chat_prompts")
        self._sync_tokens: dict[str, str] = state.table("chat_sync_tokens")

    def receive(self, thread: str, transport: str, event_id: str, sender: str, body: str,
                data: dict[str, Any], at: datetime) -> InboxItem | None:
        with self._store.transaction() as changes:
            if (transport, event_id) in self._events:
                return None
            if thread not in self._threads:
                changes.put(self._threads, thread, 0)
            [seq] = self._store.state.next_ids("chat_inbox", 1)
            item = InboxItem(seq, thread, transport, event_id, sender, body, data,
                             "pending", None, at)
            changes.put(self._inbox, seq, replace(item, data=as_json(data),
                                                  received_at=as_utc(at)))
            changes.put(self._events, (transport, event_id), seq)
            return item

    def pending_threads(self, transport: str) -> list[str]:
        with self._store.transaction():
            threads: dict[str, None] = {}
            for item in sorted(self._inbox.values(), key=lambda i: i.seq):
                if item.transport == transport and item.status == "pending":
                    threads.setdefault(item.thread)
            return list(threads)

    def snapshot(self, thread: str) -> ThreadSnapshot:
        with self._store.transaction():
            item = next((i for i in self._inbox.values()
                         if i.thread == thread and i.status == "pending"), None)
            return ThreadSnapshot(
                thread, self._threads.get(thread, 0),
                [_conversation(c) for c in self._conversations.values()
                 if c.thread == thread and c.status == "open"],
                None if item is None else _item(item))

    def commit(self, thread: str, expected_version: int, item_seq: int | None, route: str,
               changes: list[ConversationChange], at: datetime) -> list[int] | None:
        state = self._store.state
        with self._store.transaction() as undo:
            if self._threads.get(thread) != expected_version:
                return None
            undo.put(self._threads, thread, expected_version + 1)
            if item_seq is not None and item_seq in self._inbox:
                undo.put(self._inbox, item_seq, replace(self._inbox[item_seq],
                                                        status="done", route=route))
            ids: list[int] = []
            for ch in changes:
                if ch.id is None:
                    if ch.ticket_id not in state.tickets:
                        raise ConstraintViolation(f"no ticket {ch.ticket_id}")
                    if ch.ticket_id in self._tickets:
                        raise ConstraintViolation(f"ticket {ch.ticket_id} has a conversation")
                    [new_id] = state.next_ids("chat_conversations", 1)
                    undo.put(self._conversations, new_id, ConversationRecord(
                        new_id, ch.ticket_id, ch.thread, ch.participant, ch.handler,
                        as_json(ch.state), ch.status, as_utc(ch.due_at), as_utc(at),
                        as_utc(at)))
                    undo.put(self._tickets, ch.ticket_id, new_id)
                    ids.append(new_id)
                    continue
                old = self._conversations.get(ch.id)
                if old is not None:
                    undo.put(self._conversations, ch.id, replace(
                        old, state=as_json(ch.state), status=ch.status,
                        due_at=as_utc(ch.due_at), updated_at=as_utc(at)))
                ids.append(ch.id)
            return ids

    def conversation(self, conversation_id: int) -> ConversationRecord | None:
        with self._store.transaction():
            found = self._conversations.get(conversation_id)
            return None if found is None else _conversation(found)

    def by_ticket(self, ticket_id: int) -> ConversationRecord | None:
        with self._store.transaction():
            found = self._tickets.get(ticket_id)
            return None if found is None else _conversation(self._conversations[found])

    def open_for(self, participant: str) -> list[ConversationRecord]:
        with self._store.transaction():
            return [_conversation(c) for c in self._conversations.values()
                    if c.participant == participant and c.status == "open"]

    def due(self, now: datetime, limit: int) -> list[ConversationRecord]:
        with self._store.transaction():
            found = sorted((c for c in self._conversations.values()
                            if c.status == "open" and c.due_at is not None
                            and c.due_at <= now), key=lambda c: (c.due_at, c.id))
            return [_conversation(c) for c in found[:limit]]

    def add_prompt(self, event_id: str, conversation_id: int, at: datetime) -> None:
        with self._store.transaction() as changes:
            if event_id in self._prompts:
                return
            if conversation_id not in self._conversations:
                raise ConstraintViolation(f"no conversation {conversation_id}")
            changes.put(self._prompts, event_id, conversation_id)

    def prompt(self, event_id: str) -> int | None:
        with self._store.transaction():
            return self._prompts.get(event_id)

    def items(self, thread: str) -> list[InboxItem]:
        with self._store.transaction():
            return [_item(i) for i in self._inbox.values() if i.thread == thread]

    def sync_token(self, account: str) -> str | None:
        with self._store.transaction():
            return self._sync_tokens.get(account)

    def save_sync_token(self, account: str, token: str, at: datetime) -> None:
        with self._store.transaction() as changes:
            changes.put(self._sync_tokens, account, token)
