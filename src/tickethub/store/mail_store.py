"""The mail pipeline's tables and the SQL :class:`~tickethub.services.mail_state.MailState`
(migration ``0005_mail``)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    UniqueConstraint,
    bindparam,
    delete,
    func,
    insert,
    select,
    update,
)

from tickethub.domain.mail_records import (
    QUARANTINE_KEEP_BYTES,
    MailboxCursor,
    MailRecord,
    QuarantinedMail,
)
from tickethub.store.sql_store import SqlStore
from tickethub.store.tables import messages, metadata
from tickethub.store.types import UTCDateTime

mail_cursors = Table(
    "mail_cursors", metadata,
    Column("mailbox", String(500), primary_key=True),
    Column("uidvalidity", BigInteger, nullable=True),
    Column("last_uid", BigInteger, nullable=True),
    Column("updated_at", UTCDateTime, nullable=False),
)

mail_messages = Table(
    "mail_messages", metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("message_id", String(500), nullable=False, unique=True),
    Column("mailbox", String(500), nullable=False),
    Column("thread_root", String(500), nullable=False),
    Column("parent_id", String(500), nullable=True),
    Column("subject_key", String(300), nullable=False),
    Column("from_addr", String(300), nullable=False),
    Column("ticket_ids", JSON, nullable=False),
    Column("raised", JSON, nullable=False),
    Column("ops", JSON, nullable=False),
    Column("processed_at", UTCDateTime, nullable=False),
    Index("ix_mail_messages_thread", "thread_root"),
    Index("ix_mail_messages_subject", "subject_key"),
)

mail_quarantine = Table(
    "mail_quarantine", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("mailbox", String(500), nullable=False),
    Column("source_key", String(500), nullable=False),
    Column("message_id", String(500), nullable=True),
    Column("reason", Text, nullable=False),
    Column("size", Integer, nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("raw_head", LargeBinary, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("mailbox", "sha256", name="uq_mail_quarantine_raw"),
)


# Built once: a statement built per call costs more to compile than to run.
_DELETE_RECORD = delete(mail_messages).where(mail_messages.c.message_id == bindparam("mid"))
_INSERT_RECORD = insert(mail_messages)
_FIND_RECORDS = select(mail_messages).where(
    mail_messages.c.message_id.in_(bindparam("ids", expanding=True)))


_DELETE_RECORDS = delete(mail_messages).where(
    mail_messages.c.message_id.in_(bindparam("ids", expanding=True)))
_IS_RECORDED = select(mail_messages.c.seq).where(mail_messages.c.message_id == bindparam("mid"))


def _values(record: MailRecord, at: datetime) -> dict[str, Any]:
    return {
        "mailbox": record.mailbox, "thread_root": record.thread_root,
        "parent_id": record.parent_id, "subject_key": record.subject_key[:300],
        "from_addr": record.from_addr[:300], "ticket_ids": list(record.ticket_ids),
        "raised": list(record.raised), "ops": list(record.ops), "processed_at": at,
    }


def _record(row: Any) -> MailRecord:
    return MailRecord(
        message_id=row.message_id, mailbox=row.mailbox, thread_root=row.thread_root,
        parent_id=row.parent_id, subject_key=row.subject_key, from_addr=row.from_addr,
        ticket_ids=tuple(row.ticket_ids or ()), raised=tuple(row.raised or ()),
        ops=tuple(row.ops or ()), processed_at=row.processed_at,
    )


class SqlMailState:
    """:class:`~tickethub.services.mail_state.MailState` on the hub's database."""

    def __init__(self, store: SqlStore) -> None:
        self._store = store

    @property
    def store(self) -> SqlStore:
        return self._store

    def cursor(self, mailbox: str) -> MailboxCursor | None:
        with self._store.read() as uow:
            row = uow.connection.execute(
                select(mail_cursors).where(mail_cursors.c.mailbox == mailbox)).first()
        return None if row is None else MailboxCursor(row.mailbox, row.uidvalidity,
                                                      row.last_uid, row.updated_at)

    def set_cursor(self, mailbox: str, uidvalidity: int | None, last_uid: int | None,
                   at: datetime) -> None:
        values = {"uidvalidity": uidvalidity, "last_uid": last_uid, "updated_at": at}
        with self._store.write() as uow:
            done = uow.connection.execute(
                update(mail_cursors).where(mail_cursors.c.mailbox == mailbox).values(**values))
            if not done.rowcount:
                uow.connection.execute(insert(mail_cursors).values(mailbox=mailbox, **values))

    def record(self, record: MailRecord, at: datetime) -> None:
        values = _values(record, at)
        with self._store.write() as uow:
            c = uow.connection
            c.execute(_DELETE_RECORD, {"mid": record.message_id})
            c.execute(_INSERT_RECORD, {"message_id": record.message_id, **values})

    def record_many(self, records: list[tuple[MailRecord, datetime]]) -> None:
        """:meth:`record` for many, one statement per kind."""
        rows = [{"message_id": r.message_id, **_values(r, at)} for r, at in records]
        with self._store.write() as uow:
            for start in range(0, len(rows), 500):
                chunk = rows[start:start + 500]
                uow.connection.execute(_DELETE_RECORDS,
                                       {"ids": [row["message_id"] for row in chunk]})
                uow.connection.execute(_INSERT_RECORD, chunk)

    def is_recorded(self, message_id: str) -> bool:
        with self._store.read() as uow:
            return uow.connection.execute(_IS_RECORDED, {"mid": message_id}).first() is not None

    def message_ids(self) -> list[str]:
        """Every recorded Message-ID (for a bulk run's cache, ``mail.state_cache``)."""
        with self._store.read() as uow:
            return list(uow.connection.execute(select(mail_messages.c.message_id)).scalars())

    def records(self, cap: int) -> list[MailRecord] | None:
        """Every record in processing order, in one query — or ``None`` when there are
        more than ``cap`` (a bulk run then reads thread by thread)."""
        with self._store.read() as uow:
            c = uow.connection
            count = c.execute(select(func.count()).select_from(mail_messages)).scalar_one()
            if count > cap:
                return None
            rows = c.execute(select(mail_messages).order_by(mail_messages.c.seq))
            return [_record(row) for row in rows]

    def noted_keys(self, via: str) -> list[tuple[int, str]]:
        """``(ticket id, external_id)`` of every message posted ``via`` with an outside id
        (the mail pipeline's history notes, ``mail.apply``), in one query."""
        with self._store.read() as uow:
            rows = uow.connection.execute(
                select(messages.c.ticket_id, messages.c.external_id).where(
                    messages.c.via == via, messages.c.external_id.is_not(None)))
            return [(row.ticket_id, row.external_id) for row in rows]

    def get(self, message_id: str) -> MailRecord | None:
        return self.find([message_id]).get(message_id)

    def find(self, message_ids: Iterable[str]) -> dict[str, MailRecord]:
        ids = list(dict.fromkeys(message_ids))
        if not ids:
            return {}
        found: dict[str, MailRecord] = {}
        with self._store.read() as uow:
            for start in range(0, len(ids), 500):
                rows = uow.connection.execute(_FIND_RECORDS, {"ids": ids[start:start + 500]})
                found.update({row.message_id: _record(row) for row in rows})
        return found

    def thread(self, thread_root: str) -> list[MailRecord]:
        with self._store.read() as uow:
            rows = uow.connection.execute(
                select(mail_messages).where(mail_messages.c.thread_root == thread_root)
                .order_by(mail_messages.c.seq))
            return [_record(row) for row in rows]

    def by_subject(self, subject_key: str) -> MailRecord | None:
        with self._store.read() as uow:
            row = uow.connection.execute(
                select(mail_messages).where(mail_messages.c.subject_key == subject_key[:300])
                .order_by(mail_messages.c.seq).limit(1)).first()
        return None if row is None else _record(row)

    def quarantine(self, mailbox: str, source_key: str, message_id: str | None, reason: str,
                   raw: bytes, at: datetime) -> bool:
        digest = hashlib.sha256(raw).hexdigest()
        with self._store.write() as uow:
            c = uow.connection
            exists = c.execute(select(mail_quarantine.c.id).where(
                mail_quarantine.c.mailbox == mailbox, mail_quarantine.c.sha256 == digest)).first()
            if exists is not None:
                return False
            c.execute(insert(mail_quarantine).values(
                mailbox=mailbox, source_key=source_key[:500],
                message_id=(message_id or None) and message_id[:500], reason=reason,
                size=len(raw), sha256=digest, raw_head=raw[:QUARANTINE_KEEP_BYTES],
                created_at=at))
        return True

    def quarantined(self, limit: int = 100) -> list[QuarantinedMail]:
        with self._store.read() as uow:
            rows = uow.connection.execute(
                select(mail_quarantine).order_by(mail_quarantine.c.id).limit(limit))
            return [QuarantinedMail(r.id, r.mailbox, r.source_key, r.message_id, r.reason,
                                    r.size, r.sha256, r.created_at) for r in rows]

    def quarantined_raw(self, quarantine_id: int) -> bytes | None:
        with self._store.read() as uow:
            row = uow.connection.execute(select(mail_quarantine.c.raw_head).where(
                mail_quarantine.c.id == quarantine_id)).first()
        return None if row is None else bytes(row.raw_head)
