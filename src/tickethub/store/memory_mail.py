"""The mail pipeline's state in memory: the ``MailState`` port (``services/mail_state.py``)
and the bulk run's extras (``record_many``, ``message_ids``, ``records``, ``noted_keys``)
over a ``MemoryStore``, with ``store/mail_store.py``'s contracts
(``tests/store/test_store_contract_mail.py`` runs on every store).

Tables: ``mail_cursors`` (mailbox → cursor), ``mail_messages`` (seq → record; a record
stored again is deleted and inserted, so it moves to the end of the processing order, as
in SQL), ``mail_ids`` (Message-ID → seq) and ``mail_quarantine`` (id → kept mail, at most
``QUARANTINE_KEEP_BYTES`` of it; one per mailbox and content, in
``mail_quarantine_keys``). Subjects and senders are cut to 300 characters, as the
columns are."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime

from tickethub.domain.mail_records import (
    QUARANTINE_KEEP_BYTES,
    MailboxCursor,
    MailRecord,
    QuarantinedMail,
)
from tickethub.store.memory_state import Changes, as_json, as_utc
from tickethub.store.memory_store import MemoryStore


def _stored(record: MailRecord, at: datetime) -> MailRecord:
    return replace(record, subject_key=record.subject_key[:300],
                   from_addr=record.from_addr[:300], ticket_ids=tuple(record.ticket_ids),
                   raised=tuple(record.raised), ops=tuple(as_json(list(record.ops))),
                   processed_at=as_utc(at))


def _copy(record: MailRecord) -> MailRecord:
    return replace(record, ops=tuple(as_json(list(record.ops))))


class MemoryMailState:
    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        state = store.state
        self._cursors: dict[str, MailboxCursor] = state.table("mail_cursors")
        self._records: dict[int, MailRecord] = state.table("mail_messages")
        self._ids: dict[str, int] = state.table("mail_ids")
        self._quarantine: dict[int, tuple[QuarantinedMail, bytes]] = state.table(
            "mail_quarantine")
        self._kept: dict[tuple[str, str], int] = state.table("mail_quarantine_keys")

    @property
    def store(self) -> MemoryStore:
        return self._store

    def cursor(self, mailbox: str) -> MailboxCursor | None:
        with self._store.transaction():
            return self._cursors.get(mailbox)

    def set_cursor(self, mailbox: str, uidvalidity: int | None, last_uid: int | None,
                   at: datetime) -> None:
        with self._store.transaction() as changes:
            changes.put(self._cursors, mailbox,
                        MailboxCursor(mailbox, uidvalidity, last_uid, as_utc(at)))

    def _put(self, changes: Changes, record: MailRecord, at: datetime) -> None:
        old = self._ids.get(record.message_id)
        if old is not None:
            changes.drop(self._records, old)
        [seq] = self._store.state.next_ids("mail_messages", 1)
        changes.put(self._records, seq, _stored(record, at))
        changes.put(self._ids, record.message_id, seq)

    def record(self, record: MailRecord, at: datetime) -> None:
        with self._store.transaction() as changes:
            self._put(changes, record, at)

    def record_many(self, records: list[tuple[MailRecord, datetime]]) -> None:
        with self._store.transaction() as changes:
            for record, at in records:
                self._put(changes, record, at)

    def is_recorded(self, message_id: str) -> bool:
        with self._store.transaction():
            return message_id in self._ids

    def message_ids(self) -> list[str]:
        with self._store.transaction():
            return list(self._ids)

    def records(self, cap: int) -> list[MailRecord] | None:
        with self._store.transaction():
            if len(self._records) > cap:
                return None
            return [_copy(r) for r in self._records.values()]

    def noted_keys(self, via: str) -> list[tuple[int, str]]:
        with self._store.transaction():
            return [(m.ticket_id, m.external_id) for m in self._store.state.messages.values()
                    if m.via == via and m.external_id is not None]

    def get(self, message_id: str) -> MailRecord | None:
        return self.find([message_id]).get(message_id)

    def find(self, message_ids: Iterable[str]) -> dict[str, MailRecord]:
        with self._store.transaction():
            return {i: _copy(self._records[self._ids[i]]) for i in dict.fromkeys(message_ids)
                    if i in self._ids}

    def thread(self, thread_root: str) -> list[MailRecord]:
        with self._store.transaction():
            return [_copy(r) for r in self._records.values() if r.thread_root == thread_root]

    def by_subject(self, subject_key: str) -> MailRecord | None:
        key = subject_key[:300]
        with self._store.transaction():
            return next((_copy(r) for r in self._records.values() if r.subject_key == key),
                        None)

    def quarantine(self, mailbox: str, source_key: str, message_id: str | None, reason: str,
                   raw: bytes, at: datetime) -> bool:
        digest = hashlib.sha256(raw).hexdigest()
        with self._store.transaction() as changes:
            if (mailbox, digest) in self._kept:
                return False
            [kept_id] = self._store.state.next_ids("mail_quarantine", 1)
            kept = QuarantinedMail(kept_id, mailbox, source_key[:500],
                                   (message_id or None) and message_id[:500], reason,
                                   len(raw), digest, as_utc(at))
            changes.put(self._quarantine, kept_id, (kept, raw[:QUARANTINE_KEEP_BYTES]))
            changes.put(self._kept, (mailbox, digest), kept_id)
            return True

    def quarantined(self, limit: int = 100) -> list[QuarantinedMail]:
        with self._store.transaction():
            return [kept for kept, _ in list(self._quarantine.values())[:limit]]

    def quarantined_raw(self, quarantine_id: int) -> bytes | None:
        with self._store.transaction():
            found = self._quarantine.get(quarantine_id)
            return None if found is None else found[1]
