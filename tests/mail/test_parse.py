"""Parsing: charsets, RFC 2047, multipart, HTML, missing ids, malformed input, size."""

from __future__ import annotations

import socket
import time

import pytest

from tests.mail.conftest import make_mail
from tickethub.mail.parse import UnreadableMail, parse_mail


def test_rfc2047_headers_and_charset_body() -> None:
    raw = (b"From: =?utf-8?b?SsO2cmdlbiBIw6Ro?= <J@Example.ORG>\r\n"
           b"Subject: =?iso-8859-1?q?Caf=E9?= =?utf-8?q?_na=C3=AFve?=\r\n"
           b"Message-ID: <x1@example.org>\r\n"
           b"Content-Type: text/plain; charset=iso-8859-15\r\n\r\n"
           b"Prix: 5 \xa4\r\n")
    mail = parse_mail(raw)
    assert mail.from_name == "Jörgen Häh"
    assert mail.from_addr == "j@example.org"
    assert mail.subject == "Café naïve"
    assert "5 €" in mail.text
    assert mail.defects == ()


def test_unknown_charset_falls_back_and_is_noted() -> None:
    raw = (b"From: a@example.org\nMessage-ID: <x2@example.org>\nSubject: s\n"
           b"Content-Type: text/plain; charset=x-no-such-charset\n\nna\xc3\xafve text\n")
    mail = parse_mail(raw)
    assert "naïve text" in mail.text
    assert "UnknownCharset:x-no-such-charset" in mail.defects


def test_wrong_charset_declared_still_reads() -> None:
    raw = (b"From: a@example.org\nMessage-ID: <x3@example.org>\nSubject: s\n"
           b"Content-Type: text/plain; charset=us-ascii\n\ncaf\xc3\xa9\n")
    assert "café" in parse_mail(raw).text


def test_multipart_prefers_plain_and_lists_attachments() -> None:
    msg = make_mail("plain body", html="<p>html body</p>")
    from email import message_from_bytes
    from email.policy import default

    em = message_from_bytes(msg, policy=default)
    em.add_attachment(b"\x00" * 1000, maintype="application", subtype="octet-stream",
                      filename="blob.bin")
    mail = parse_mail(em.as_bytes())
    assert mail.text.strip() == "plain body"
    assert [(a.filename, a.size) for a in mail.attachments] == [("blob.bin", 1000)]


def test_html_only_with_tracking_pixel_fetches_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsing tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    html = ('<html><head><link rel="stylesheet" href="http://t.example/s.css">'
            '<script src="http://t.example/x.js"></script></head><body>'
            '<p>Can you reset my <b>password</b>?</p>'
            '<img src="http://tracker.example/pixel.gif?u=42" width="1" height="1">'
            '<img src="https://tracker.example/open.png" alt="">'
            '<iframe src="http://t.example/frame"></iframe></body></html>')
    mail = parse_mail(make_mail("", html=html))
    assert mail.html_only
    assert mail.text == "Can you reset my password?"
    assert "tracker" not in mail.text and "pixel" not in mail.text


def test_missing_message_id_gets_a_stable_one() -> None:
    raw = make_mail("no id here", message_id=None)
    first, second = parse_mail(raw), parse_mail(raw)
    assert first.message_id_synthesized
    assert first.message_id == second.message_id
    assert first.message_id.endswith("@synthesized.tickethub.invalid>")
    assert parse_mail(make_mail("other", message_id=None)).message_id != first.message_id


def test_references_and_in_reply_to_are_normalized() -> None:
    raw = make_mail("x", message_id="<c@x>", in_reply_to="b@x",
                    references="<a@x> <b@x>  <c@x>")
    mail = parse_mail(raw)
    assert mail.references == ("<a@x>", "<b@x>", "<c@x>")
    assert mail.in_reply_to == ("<b@x>",)
    assert mail.parent_ids == ("<a@x>", "<b@x>")  # never itself


@pytest.mark.parametrize("raw, reason", [
    (b"", "empty input"),
    (b"   \n\n  ", "empty input"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 100, "no header lines"),
    (b"just some text without any header line at all\n", "no header lines"),
])
def test_not_a_mail_is_unreadable_with_a_reason(raw: bytes, reason: str) -> None:
    with pytest.raises(UnreadableMail) as caught:
        parse_mail(raw)
    assert reason in caught.value.reason


def test_malformed_mime_still_parses() -> None:
    raw = (b"From: a@example.org\nMessage-ID: <mm@x>\nSubject: broken\n"
           b"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"NOPE\"\n\n"
           b"--WRONG\nContent-Type: text/plain\n\nThe boundary is wrong, is it readable?\n"
           b"--WRONG--\n")
    mail = parse_mail(raw)
    assert mail.message_id == "<mm@x>"
    assert mail.defects  # the parser noticed
    raw2 = (b"From: a@example.org\nMessage-ID: <mm2@x>\nSubject: =?utf-8?q?unterminated\n"
            b"Content-Type: text/plain; charset=\"utf-8\nContent-Transfer-Encoding: base64\n\n"
            b"!!!not base64!!!\n")
    assert parse_mail(raw2).message_id == "<mm2@x>"


def test_twenty_megabyte_mail() -> None:
    from email import message_from_bytes
    from email.policy import default

    em = message_from_bytes(make_mail("See the attached dump, what is wrong?"), policy=default)
    em.add_attachment(b"\xab" * (15 * 1024 * 1024), maintype="application",
                      subtype="octet-stream", filename="dump.bin")
    raw = em.as_bytes()
    assert len(raw) > 20 * 1024 * 1024
    started = time.perf_counter()
    mail = parse_mail(raw, max_bytes=25 * 1024 * 1024)
    elapsed = time.perf_counter() - started
    assert mail.own_text.startswith("See the attached dump")
    assert mail.attachments[0].size == 15 * 1024 * 1024
    assert elapsed < 30  # generous: a sanity bound on a shared machine, not a benchmark
    with pytest.raises(UnreadableMail, match="over the limit"):
        parse_mail(raw, max_bytes=20 * 1024 * 1024)
