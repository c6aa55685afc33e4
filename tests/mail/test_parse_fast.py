"""The parse shortcuts give what the long way gives: the header-block-only parse of a
single-part mail, the pre-screen before the "... wrote:" pattern, and mail parsed
without its body when the pipeline will only record it as ignored."""

from __future__ import annotations

import sys
from email.message import EmailMessage
from email.parser import BytesParser
from functools import partial

import pytest

from tickethub.mail.parse import POLICY, _parse_message, parse_mail
from tickethub.mail.pipeline import MailPipeline
from tickethub.mail.quotes import _WROTE_ENDINGS, _WROTE_LAST
from tickethub.mail.screening import is_screened

SHAPES = {
    "plain": b"From: a@example.org\nSubject: s\n\nbody\n\nmore\n",
    "crlf": b"From: a@example.org\r\nSubject: s\r\n\r\nbody\r\n",
    "no blank line": b"From: a@example.org\nSubject: s\nthis line ends the headers\nbody\n",
    "envelope line last": b"From: a@example.org\nFrom x Mon Jan 1\n\nbody\n",
    "unix from first": b"From x@y Mon Jan  1 00:00:00 2002\nSubject: s\n\nbody\n",
    "form feed": b"From: a@example.org\nSubject: s\x0c\n\nbody\n",
    "continuation": b"Subject: a\n  folded\nFrom: a@example.org\n\nb\n",
    "first line continuation": b" x\nSubject: s\n\nbody\n",
    "lone cr": b"Subject: s\rFrom: a@example.org\r\rbody\r",
    "multipart": (b"Content-Type: multipart/alternative; boundary=XX\n\n--XX\n"
                  b"Content-Type: text/plain\n\nhi\n--XX--\n"),
    "message/rfc822": b"Content-Type: message/rfc822\n\nSubject: inner\n\nbody\n",
    "headers only": b"Subject: s\nFrom: a@example.org\n",
    "blank first": b"\nSubject: s\n\nbody\n",
    "8 bit": b"Subject: caf\xc3\xa9\n\nna\xefve\n",
}


@pytest.mark.parametrize("raw", SHAPES.values(), ids=SHAPES.keys())
def test_the_header_block_parse_is_the_whole_parse(raw: bytes) -> None:
    expected = BytesParser(_class=EmailMessage, policy=POLICY).parsebytes(raw)
    got = _parse_message(raw)
    assert list(got.raw_items()) == list(expected.raw_items())
    assert got.get_payload() == expected.get_payload() or got.is_multipart()
    assert got.get_unixfrom() == expected.get_unixfrom()
    assert [type(d) for d in got.defects] == [type(d) for d in expected.defects]
    assert got.is_multipart() == expected.is_multipart()
    assert got.as_bytes() == expected.as_bytes()


def test_every_character_that_can_end_a_wrote_line_is_screened() -> None:
    finals = {":", "\uff1a"} | {ending[-1] for ending in _WROTE_ENDINGS}
    needed = {c for i in range(sys.maxunicode + 1)
              if (low := (c := chr(i)).lower()) and low[-1] in finals}
    assert needed <= _WROTE_LAST


SPAM = (b"X-Spam-Flag: YES\nFrom: s@spam.example\nMessage-ID: <s1@spam.example>\n"
        b"Subject: refund\nContent-Type: text/html\n\n"
        b"<p>How do I get <b>my refund</b>? Can anyone help me with this?</p>\n")


def test_a_mail_to_be_ignored_is_parsed_without_its_body() -> None:
    skip = partial(is_screened, ignore=("spam", "bulk"))
    mail = parse_mail(SPAM, skip_body=skip)
    whole = parse_mail(SPAM)
    assert not mail.body_read and whole.body_read
    assert (mail.text, mail.own_text) == ("", "")
    assert "How do I get my refund?" in whole.text
    assert (mail.message_id, mail.subject, mail.headers) == (
        whole.message_id, whole.subject, whole.headers)
    kept = parse_mail(SPAM, skip_body=partial(is_screened, ignore=("bulk",)))
    assert kept.body_read and kept.text == whole.text


async def test_the_pipeline_reads_the_body_a_screening_it_does_not_share_skipped(
        pipeline: MailPipeline) -> None:
    pipeline.ignore = frozenset()  # this pipeline keeps spam
    headers_only = parse_mail(SPAM, skip_body=lambda _mail: True)
    outcome = await pipeline.process("box", "1", SPAM, headers_only)
    assert outcome == "added"
    issue = pipeline.tickets.get(pipeline.state.find([headers_only.message_id])[
        headers_only.message_id].raised[0])
    assert "my refund" in issue.body
