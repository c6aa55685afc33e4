"""Records of the mailbox pipeline that the store keeps (``services.mail_state`` is
the port): where a mailbox was read up to, processed mails, quarantined ones."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# How much of a quarantined mail the store keeps (its head: enough to see what it was
# and why it failed, without letting one huge mail fill the database). A record rule,
# not a column detail, so the SQL and memory stores share it from here.
QUARANTINE_KEEP_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class MailboxCursor:
    """Where a mailbox was read up to. IMAP: ``uidvalidity`` + ``last_uid`` (a changed
    UIDVALIDITY means the UIDs were renumbered: start over, Message-IDs keep it
    idempotent). Files: no cursor fields; processed Message-IDs are the cursor."""

    mailbox: str
    uidvalidity: int | None
    last_uid: int | None
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class MailRecord:
    """One processed mail: its thread, nearest parent, the issues it raised or changed."""

    message_id: str
    mailbox: str
    thread_root: str
    parent_id: str | None
    subject_key: str
    from_addr: str
    ticket_ids: tuple[int, ...] = ()
    raised: tuple[int, ...] = ()
    ops: tuple[dict[str, Any], ...] = field(default=())
    processed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class QuarantinedMail:
    id: int
    mailbox: str
    source_key: str
    message_id: str | None
    reason: str
    size: int
    sha256: str
    created_at: datetime
