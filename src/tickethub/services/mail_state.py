"""What the mail pipeline remembers between runs: a cursor per mailbox, every processed
mail (its thread and the issues it touched), and the quarantine.

The pipeline depends on the :class:`MailState` port; ``store/mail_store.py`` implements
it in SQL (tables from migration ``0005_mail``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Protocol

from tickethub.domain.mail_records import MailboxCursor as MailboxCursor
from tickethub.domain.mail_records import MailRecord as MailRecord
from tickethub.domain.mail_records import QuarantinedMail as QuarantinedMail


class MailState(Protocol):
    def cursor(self, mailbox: str) -> MailboxCursor | None: ...
    def set_cursor(self, mailbox: str, uidvalidity: int | None, last_uid: int | None,
                   at: datetime) -> None: ...
    def record(self, record: MailRecord, at: datetime) -> None:
        """Store (or replace) the record of a processed mail."""
        ...
    def get(self, message_id: str) -> MailRecord | None: ...
    def is_recorded(self, message_id: str) -> bool:
        """Whether a mail with this Message-ID was processed."""
        ...
    def find(self, message_ids: Iterable[str]) -> dict[str, MailRecord]: ...
    def thread(self, thread_root: str) -> list[MailRecord]:
        """Records of one thread, in processing order."""
        ...
    def by_subject(self, subject_key: str) -> MailRecord | None:
        """The earliest record whose base subject is ``subject_key``."""
        ...
    def quarantine(self, mailbox: str, source_key: str, message_id: str | None, reason: str,
                   raw: bytes, at: datetime) -> bool:
        """Keep an unprocessable mail with its reason; False when already kept."""
        ...
    def quarantined(self, limit: int = 100) -> list[QuarantinedMail]: ...
    def quarantined_raw(self, quarantine_id: int) -> bytes | None: ...


def thread_ticket_ids(records: Sequence[MailRecord]) -> list[int]:
    """Issues raised in a thread, oldest first, each once."""
    seen: dict[int, None] = {}
    for record in records:
        for ticket_id in record.raised:
            seen.setdefault(ticket_id, None)
    return list(seen)
