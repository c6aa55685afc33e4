"""The store contract, the mail pipeline's state (``MailState`` and the bulk run's
extras): cursors, processed mails, the quarantine, on the in-memory store, SQLite and
PostgreSQL."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.store.conftest import on_store
from tickethub.domain.mail_records import QUARANTINE_KEEP_BYTES, MailboxCursor, MailRecord
from tickethub.domain.messages import MessageDraft, MessageKind
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.store.mail_store import SqlMailState
from tickethub.store.memory_mail import MemoryMailState

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
BOX = "imap://hub@mail/INBOX"


@pytest.fixture
def mail(store: Any) -> Any:
    return on_store(store, MemoryMailState, SqlMailState)


def _mail(mid: str, root: str = "<root>", subject: str = "deploy", **more: Any
          ) -> MailRecord:
    return MailRecord(mid, BOX, root, more.pop("parent_id", None), subject, "ann@x.org",
                      **more)


def test_a_cursor_per_mailbox_is_set_and_moved(mail: Any) -> None:
    assert mail.cursor(BOX) is None
    mail.set_cursor(BOX, 7, 100, NOW)
    mail.set_cursor("maildir:/x", None, None, NOW)
    later = NOW + timedelta(minutes=1)
    mail.set_cursor(BOX, 7, 120, later)
    assert mail.cursor(BOX) == MailboxCursor(BOX, 7, 120, later)
    assert mail.cursor("maildir:/x") == MailboxCursor("maildir:/x", None, None, NOW)
    mail.set_cursor(BOX, 2**40, 2**33, later)  # UIDs are 32-bit unsigned, validity too
    assert mail.cursor(BOX).uidvalidity == 2**40


def test_a_processed_mail_is_recorded_found_and_replaced(mail: Any) -> None:
    ops = ({"op": "raise", "title": "x", "ids": (1, 2)},)
    mail.record(_mail("<a>", ticket_ids=(3, 1), raised=(3,), ops=ops), NOW)
    mail.record(_mail("<b>", parent_id="<a>"), NOW)
    assert mail.is_recorded("<a>") and not mail.is_recorded("<nope>")
    found = mail.get("<a>")
    assert found == _mail("<a>", ticket_ids=(3, 1), raised=(3,),
                          ops=({"op": "raise", "title": "x", "ids": [1, 2]},),
                          processed_at=NOW)
    assert mail.get("<nope>") is None
    assert set(mail.find(["<b>", "<a>", "<b>", "<nope>"])) == {"<a>", "<b>"}
    assert mail.find([]) == {}
    found.ops[0]["title"] = "changed by the caller"
    assert mail.get("<a>").ops[0]["title"] == "x"
    later = NOW + timedelta(hours=1)
    mail.record(_mail("<a>", ticket_ids=(4,)), later)  # again: replaced, not doubled
    assert mail.get("<a>").ticket_ids == (4,) and mail.get("<a>").processed_at == later
    assert sorted(mail.message_ids()) == ["<a>", "<b>"]


def test_a_thread_in_processing_order_and_the_first_by_subject(mail: Any) -> None:
    mail.record(_mail("<a>", subject="deploy"), NOW)
    mail.record(_mail("<b>", subject="deploy"), NOW)
    mail.record(_mail("<c>", root="<other>", subject="lunch"), NOW)
    assert [r.message_id for r in mail.thread("<root>")] == ["<a>", "<b>"]
    assert mail.thread("<none>") == []
    assert mail.by_subject("deploy").message_id == "<a>"
    assert mail.by_subject("nothing") is None
    mail.record(_mail("<a>", subject="deploy"), NOW)  # processed again: now the latest
    assert [r.message_id for r in mail.thread("<root>")] == ["<b>", "<a>"]
    assert mail.by_subject("deploy").message_id == "<b>"
    assert [r.message_id for r in mail.records(10)] == ["<b>", "<c>", "<a>"]
    assert mail.records(2) is None  # more than the cap


def test_long_subjects_and_senders_are_cut_and_found_by_their_cut_key(mail: Any) -> None:
    subject = "s" * 400
    mail.record(MailRecord("<a>", BOX, "<a>", None, subject, "f" * 400 + "@x"), NOW)
    stored = mail.get("<a>")
    assert stored.subject_key == "s" * 300 and stored.from_addr == "f" * 300
    assert mail.by_subject(subject).message_id == "<a>"


def test_many_records_in_one_call(mail: Any) -> None:
    mail.record(_mail("<a>"), NOW)
    later = NOW + timedelta(minutes=1)
    mail.record_many([(_mail("<b>"), NOW), (_mail("<a>", raised=(9,)), later)])
    assert [r.message_id for r in mail.thread("<root>")] == ["<b>", "<a>"]
    assert mail.get("<a>").raised == (9,) and mail.get("<a>").processed_at == later
    mail.record_many([])
    assert len(mail.message_ids()) == 2


def test_a_mail_is_quarantined_once_per_mailbox_and_content(mail: Any) -> None:
    raw = b"From: x\r\n\r\n" + b"x" * (QUARANTINE_KEEP_BYTES + 10)
    assert mail.quarantine(BOX, "uid:1", "<bad>", "unreadable", raw, NOW)
    assert not mail.quarantine(BOX, "uid:2", "<bad>", "again", raw, NOW)  # same bytes
    assert mail.quarantine("maildir:/x", "f1", "", "empty id", raw, NOW)  # other mailbox
    assert mail.quarantine(BOX, "u" * 600, "<" + "m" * 600, "long", b"other", NOW)
    first, second, third = mail.quarantined()
    assert (first.mailbox, first.source_key, first.message_id, first.reason) == (
        BOX, "uid:1", "<bad>", "unreadable")
    assert first.size == len(raw) and first.sha256 == hashlib.sha256(raw).hexdigest()
    assert first.created_at == NOW and first.id < second.id < third.id
    assert second.message_id is None  # an empty Message-ID is none
    assert len(third.source_key) == 500 and len(third.message_id) == 500
    assert mail.quarantined_raw(first.id) == raw[:QUARANTINE_KEEP_BYTES]
    assert mail.quarantined_raw(third.id) == b"other"
    assert mail.quarantined_raw(999_999) is None
    assert [q.id for q in mail.quarantined(limit=2)] == [first.id, second.id]


def test_notes_posted_by_the_pipeline_are_listed_by_their_outside_id(mail: Any,
                                                                     store: Any) -> None:
    with store.write() as uow:
        a, b = uow.tickets.add_many([(TicketDraft(Kind.TASK, "a"), "mail"),
                                     (TicketDraft(Kind.TASK, "b"), "mail")], NOW)
        uow.messages.add_many([
            MessageDraft(a.id, "mail", "email", "note", MessageKind.SYSTEM, True, "<m1>"),
            MessageDraft(b.id, "mail", "email", "note", MessageKind.SYSTEM, True, "<m2>"),
            MessageDraft(b.id, "mail", "email", "no id", MessageKind.SYSTEM, True),
            MessageDraft(b.id, "ann", "web", "other", MessageKind.COMMENT, True, "<m3>"),
        ], NOW)
    assert sorted(mail.noted_keys("email")) == [(a.id, "<m1>"), (b.id, "<m2>")]
    assert mail.noted_keys("github") == []


def test_what_a_batch_recorded_is_gone_when_it_raises(mail: Any, store: Any) -> None:
    mail.record(_mail("<a>"), NOW)
    with pytest.raises(RuntimeError), store.batch():
        mail.record(_mail("<a>", raised=(5,)), NOW)
        mail.record(_mail("<b>"), NOW)
        mail.set_cursor(BOX, 1, 2, NOW)
        mail.quarantine(BOX, "k", None, "r", b"raw", NOW)
        assert mail.is_recorded("<b>")  # the batch sees its own writes
        raise RuntimeError("the batch failed")
    assert mail.message_ids() == ["<a>"] and mail.get("<a>").raised == ()
    assert mail.cursor(BOX) is None and mail.quarantined() == []
    assert [r.message_id for r in mail.thread("<root>")] == ["<a>"]
