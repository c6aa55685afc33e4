"""A :class:`~tickethub.services.mail_state.MailState` that remembers what one bulk run
read and wrote, so a mailbox of thousands of mails asks the database once per thread
instead of several times per mail, and writes its records in one statement per batch.

Contract: it answers exactly as the state it wraps would, provided nothing else writes
mail records while it lives — true for one ``mail ingest`` run, which is the only place
it is used (``mail.build.ingest``); the hub following a mailbox under ``serve`` reads
the database directly. The Message-IDs already recorded are loaded once at the start, so
the "already processed?" check costs no query; when the run starts with every record
(:meth:`CachedMailState.preloaded`, one query for a mailbox of up to
``PRELOAD_CAP`` records) no look-up queries the database at all. Records are written
by :meth:`flush`, in the same transaction as the ticket changes of their mails. Cursors
and the quarantine pass straight through.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Protocol

from tickethub.services.mail_state import MailboxCursor, MailRecord, MailState, QuarantinedMail


class BulkMailState(MailState, Protocol):
    def record_many(self, records: list[tuple[MailRecord, datetime]]) -> None: ...


PRELOAD_CAP = 200_000


class CachedMailState:
    def __init__(self, inner: BulkMailState, known_ids: Iterable[str]) -> None:
        self.inner = inner
        self._known = set(known_ids)
        self._records: dict[str, MailRecord] = {}
        self._threads: dict[str, list[MailRecord]] = {}
        self._subjects: dict[str, MailRecord | None] = {}
        self._pending: dict[str, tuple[MailRecord, datetime]] = {}
        self._first_pending: dict[str, MailRecord] = {}  # subject → first record this run
        self._complete = False  # every stored record is in memory
        self._stored_subjects: dict[str, MailRecord] = {}  # stored key (cut at 300) → first

    @classmethod
    def preloaded(cls, inner: BulkMailState, records: list[MailRecord]) -> CachedMailState:
        """A cache holding ``records`` — every record stored, in processing order."""
        cache = cls(inner, (r.message_id for r in records))
        cache._complete = True
        for record in records:
            cache._records[record.message_id] = record
            cache._threads.setdefault(record.thread_root, []).append(record)
            if record.subject_key:
                cache._stored_subjects.setdefault(record.subject_key, record)
        return cache

    def _stored_thread(self, thread_root: str) -> list[MailRecord]:
        return [] if self._complete else self.inner.thread(thread_root)

    def flush(self) -> None:
        """Write the records kept since the last flush, in one statement per table; call
        it before the transaction they belong to commits (``mail.build.ingest`` does)."""
        if self._pending:
            self.inner.record_many(list(self._pending.values()))
            self._pending.clear()

    # -- cached ---------------------------------------------------------------------------

    def record(self, record: MailRecord, at: datetime) -> None:
        """Kept in memory until :meth:`flush`; reads through this object see it at once."""
        replaced = record.message_id in self._known
        self._pending[record.message_id] = (record, at)
        self._known.add(record.message_id)
        self._records[record.message_id] = record
        thread = self._threads.get(record.thread_root)
        if thread is None:
            self._threads[record.thread_root] = thread = self._stored_thread(
                record.thread_root)
        if replaced:
            thread[:] = [r for r in thread if r.message_id != record.message_id]
        thread.append(record)
        if record.subject_key:
            self._first_pending.setdefault(record.subject_key, record)
            if self._subjects.get(record.subject_key, record) is None:
                self._subjects[record.subject_key] = record  # the first with this subject

    def is_recorded(self, message_id: str) -> bool:
        return message_id in self._known

    def get(self, message_id: str) -> MailRecord | None:
        return self.find([message_id]).get(message_id)

    def find(self, message_ids: Iterable[str]) -> dict[str, MailRecord]:
        found: dict[str, MailRecord] = {}
        missing: list[str] = []
        for mid in message_ids:
            if mid not in self._known:
                continue
            record = self._records.get(mid)
            if record is None:
                missing.append(mid)
            else:
                found[mid] = record
        if missing:
            fetched = self.inner.find(missing)
            self._records.update(fetched)
            found.update(fetched)
        return found

    def thread(self, thread_root: str) -> list[MailRecord]:
        thread = self._threads.get(thread_root)
        if thread is None:
            thread = self._threads[thread_root] = self._stored_thread(thread_root)
        return list(thread)

    def by_subject(self, subject_key: str) -> MailRecord | None:
        if subject_key not in self._subjects:
            stored = (self._stored_subjects.get(subject_key[:300]) if self._complete
                      else self.inner.by_subject(subject_key))
            found = stored or self._first_pending.get(subject_key)
            self._subjects[subject_key] = found
        return self._subjects[subject_key]

    # -- passed through --------------------------------------------------------------------

    def cursor(self, mailbox: str) -> MailboxCursor | None:
        return self.inner.cursor(mailbox)

    def set_cursor(self, mailbox: str, uidvalidity: int | None, last_uid: int | None,
                   at: datetime) -> None:
        self.inner.set_cursor(mailbox, uidvalidity, last_uid, at)

    def quarantine(self, mailbox: str, source_key: str, message_id: str | None, reason: str,
                   raw: bytes, at: datetime) -> bool:
        return self.inner.quarantine(mailbox, source_key, message_id, reason, raw, at)

    def quarantined(self, limit: int = 100) -> list[QuarantinedMail]:
        return self.inner.quarantined(limit)

    def quarantined_raw(self, quarantine_id: int) -> bytes | None:
        return self.inner.quarantined_raw(quarantine_id)
