"""The conversation engine's tables and the SQL
:class:`~tickethub.services.chat_state.ChatState` (migration ``0012_chat_conversations``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from tickethub.domain.chat import (
    ConversationChange,
    ConversationRecord,
    InboxItem,
    ThreadSnapshot,
)
from tickethub.store.advisory_locks import CHAT_INBOX, hold_named_for_transaction
from tickethub.store.sql_store import SqlStore
from tickethub.store.tables import metadata
from tickethub.store.types import UTCDateTime

chat_threads = Table(
    "chat_threads", metadata,
    Column("thread", String(500), primary_key=True),
    Column("version", Integer, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

chat_inbox = Table(
    "chat_inbox", metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("thread", String(500), nullable=False),
    Column("transport", String(50), nullable=False),
    Column("event_id", String(500), nullable=False),
    Column("sender", String(300), nullable=False),
    Column("body", Text, nullable=False),
    Column("data", JSON, nullable=False),
    Column("status", String(20), nullable=False),
    Column("route", Text, nullable=True),
    Column("received_at", UTCDateTime, nullable=False),
    UniqueConstraint("transport", "event_id", name="uq_chat_inbox_event"),
    Index("ix_chat_inbox_thread_status", "thread", "status", "seq"),
)

chat_conversations = Table(
    "chat_conversations", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("ticket_id", Integer, ForeignKey("tickets.id"), nullable=False, unique=True),
    Column("thread", String(500), nullable=False),
    Column("participant", String(300), nullable=False),
    Column("handler", String(100), nullable=False),
    Column("state", JSON, nullable=False),
    Column("status", String(20), nullable=False),
    Column("due_at", UTCDateTime, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Index("ix_chat_conversations_thread", "thread", "status"),
    Index("ix_chat_conversations_participant", "participant", "status"),
    Index("ix_chat_conversations_due", "status", "due_at"),
)

chat_prompts = Table(
    "chat_prompts", metadata,
    Column("event_id", String(500), primary_key=True),
    Column("conversation_id", Integer, ForeignKey("chat_conversations.id"), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

chat_sync_tokens = Table(
    "chat_sync_tokens", metadata,
    Column("account", String(500), primary_key=True),
    Column("token", Text, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)


def _item(row: Any) -> InboxItem:
    return InboxItem(row.seq, row.thread, row.transport, row.event_id, row.sender, row.body,
                     dict(row.data or {}), row.status, row.route, row.received_at)


def _conversation(row: Any) -> ConversationRecord:
    return ConversationRecord(row.id, row.ticket_id, row.thread, row.participant, row.handler,
                              dict(row.state or {}), row.status, row.due_at, row.created_at,
                              row.updated_at)


class SqlChatState:
    """:class:`~tickethub.services.chat_state.ChatState` on the hub's database."""

    def __init__(self, store: SqlStore) -> None:
        self._store = store

    def receive(self, thread: str, transport: str, event_id: str, sender: str, body: str,
                data: dict[str, Any], at: datetime) -> InboxItem | None:
        try:
            with self._store.write() as uow:
                c = uow.connection
                # Until this commits, the thread's next message (from any process) waits:
                # otherwise a later seq could commit first and be handled first.
                hold_named_for_transaction(c, CHAT_INBOX, thread)
                seen = c.execute(select(chat_inbox.c.seq).where(
                    chat_inbox.c.transport == transport,
                    chat_inbox.c.event_id == event_id)).first()
                if seen is not None:
                    return None
                known = c.execute(select(chat_threads.c.version).where(
                    chat_threads.c.thread == thread)).first()
                if known is None:
                    c.execute(insert(chat_threads).values(thread=thread, version=0,
                                                          updated_at=at))
                seq = c.execute(insert(chat_inbox).values(
                    thread=thread, transport=transport, event_id=event_id, sender=sender,
                    body=body, data=data, status="pending", route=None, received_at=at,
                ).returning(chat_inbox.c.seq)).scalar_one()
        except IntegrityError:
            # Another process took the same event id (or created the thread row) at the
            # same moment: if the event is there now, this was a retry.
            with self._store.read() as uow:
                seen = uow.connection.execute(select(chat_inbox.c.seq).where(
                    chat_inbox.c.transport == transport,
                    chat_inbox.c.event_id == event_id)).first()
            if seen is not None:
                return None
            return self.receive(thread, transport, event_id, sender, body, data, at)
        return InboxItem(seq, thread, transport, event_id, sender, body, data, "pending",
                         None, at)

    def pending_threads(self, transport: str) -> list[str]:
        oldest = func.min(chat_inbox.c.seq)
        with self._store.read() as uow:
            rows = uow.connection.execute(
                select(chat_inbox.c.thread, oldest).where(
                    chat_inbox.c.transport == transport, chat_inbox.c.status == "pending",
                ).group_by(chat_inbox.c.thread).order_by(oldest)).all()
        return [row[0] for row in rows]

    def snapshot(self, thread: str) -> ThreadSnapshot:
        with self._store.read() as uow:
            c = uow.connection
            version = c.execute(select(chat_threads.c.version).where(
                chat_threads.c.thread == thread)).scalar()
            conversations = c.execute(select(chat_conversations).where(
                chat_conversations.c.thread == thread, chat_conversations.c.status == "open",
            ).order_by(chat_conversations.c.id)).all()
            item = c.execute(select(chat_inbox).where(
                chat_inbox.c.thread == thread, chat_inbox.c.status == "pending",
            ).order_by(chat_inbox.c.seq).limit(1)).first()
        return ThreadSnapshot(thread, int(version or 0),
                              [_conversation(r) for r in conversations],
                              None if item is None else _item(item))

    def commit(self, thread: str, expected_version: int, item_seq: int | None, route: str,
               changes: list[ConversationChange], at: datetime) -> list[int] | None:
        with self._store.write() as uow:
            c = uow.connection
            won = c.execute(update(chat_threads).where(
                chat_threads.c.thread == thread, chat_threads.c.version == expected_version,
            ).values(version=expected_version + 1, updated_at=at)).rowcount
            if not won:
                return None
            if item_seq is not None:
                c.execute(update(chat_inbox).where(chat_inbox.c.seq == item_seq)
                          .values(status="done", route=route))
            ids: list[int] = []
            for ch in changes:
                values = {"state": ch.state, "status": ch.status, "due_at": ch.due_at,
                          "updated_at": at}
                if ch.id is None:
                    ids.append(c.execute(insert(chat_conversations).values(
                        ticket_id=ch.ticket_id, thread=ch.thread, participant=ch.participant,
                        handler=ch.handler, created_at=at, **values,
                    ).returning(chat_conversations.c.id)).scalar_one())
                else:
                    c.execute(update(chat_conversations)
                              .where(chat_conversations.c.id == ch.id).values(**values))
                    ids.append(ch.id)
            return ids

    def _one(self, *where: Any) -> ConversationRecord | None:
        with self._store.read() as uow:
            row = uow.connection.execute(select(chat_conversations).where(*where)).first()
        return None if row is None else _conversation(row)

    def conversation(self, conversation_id: int) -> ConversationRecord | None:
        return self._one(chat_conversations.c.id == conversation_id)

    def by_ticket(self, ticket_id: int) -> ConversationRecord | None:
        return self._one(chat_conversations.c.ticket_id == ticket_id)

    def open_for(self, participant: str) -> list[ConversationRecord]:
        with self._store.read() as uow:
            rows = uow.connection.execute(select(chat_conversations).where(
                chat_conversations.c.participant == participant,
                chat_conversations.c.status == "open",
            ).order_by(chat_conversations.c.id)).all()
        return [_conversation(r) for r in rows]

    def due(self, now: datetime, limit: int) -> list[ConversationRecord]:
        with self._store.read() as uow:
            rows = uow.connection.execute(select(chat_conversations).where(
                chat_conversations.c.status == "open", chat_conversations.c.due_at <= now,
            ).order_by(chat_conversations.c.due_at).limit(limit)).all()
        return [_conversation(r) for r in rows]

    def add_prompt(self, event_id: str, conversation_id: int, at: datetime) -> None:
        with self._store.write() as uow:
            c = uow.connection
            if c.execute(select(chat_prompts.c.event_id).where(
                    chat_prompts.c.event_id == event_id)).first() is None:
                c.execute(insert(chat_prompts).values(
                    event_id=event_id, conversation_id=conversation_id, created_at=at))

    def prompt(self, event_id: str) -> int | None:
        with self._store.read() as uow:
            return uow.connection.execute(select(chat_prompts.c.conversation_id).where(
                chat_prompts.c.event_id == event_id)).scalar()

    def items(self, thread: str) -> list[InboxItem]:
        with self._store.read() as uow:
            rows = uow.connection.execute(select(chat_inbox).where(
                chat_inbox.c.thread == thread).order_by(chat_inbox.c.seq)).all()
        return [_item(r) for r in rows]

    def sync_token(self, account: str) -> str | None:
        with self._store.read() as uow:
            token: str | None = uow.connection.execute(select(chat_sync_tokens.c.token).where(
                chat_sync_tokens.c.account == account)).scalar()
        return token

    def save_sync_token(self, account: str, token: str, at: datetime) -> None:
        """Keep ``token`` as ``account``'s sync token: one upsert, so two writers saving
        a first token at once both succeed (an UPDATE-then-INSERT would fail the second
        INSERT on PostgreSQL), the later one winning."""
        with self._store.write() as uow:
            c = uow.connection
            dialect_insert = postgresql.insert if c.dialect.name == "postgresql" else sqlite.insert
            statement = dialect_insert(chat_sync_tokens).values(
                account=account, token=token, updated_at=at)
            c.execute(statement.on_conflict_do_update(
                index_elements=[chat_sync_tokens.c.account],
                set_={"token": statement.excluded.token,
                      "updated_at": statement.excluded.updated_at}))
