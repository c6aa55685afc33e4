"""Hostile mail, made here: every header parser, every charset path, nesting and size
bombs. None may crash the parser or stop the pipeline; readable mail is read (with a
fallback and a defect noted), not quarantined; a mail that still fails is quarantined
with its reason and the mail behind it is processed."""

from __future__ import annotations

import base64

import pytest

from tests.mail.conftest import make_mail
from tickethub.channels.email import ReplyReader
from tickethub.domain.actors import SYSTEM
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import TicketDraft, TicketQuery
from tickethub.mail.build import make_pipeline
from tickethub.mail.extractors.rules import RulesExtractor
from tickethub.mail.html_text import html_to_text
from tickethub.mail.parse import UnreadableMail, parse_mail, printable
from tickethub.mail.pipeline import MailPipeline
from tickethub.mail.reply_token import sign
from tickethub.server.runtime import HubRuntime

KEY = b"k" * 32
POISON_TO = b"To: " + b"(" * 600 + b"\n"


def with_header(line: bytes, mid: str = "<h@example.org>") -> bytes:
    return (b"From: a@example.org\r\nSubject: Proxy setup\r\nMessage-ID: " + mid.encode()
            + b"\r\n" + line.rstrip(b"\n").replace(b"\n", b"\r\n") + b"\r\n\r\nHello?\r\n")


# -- every header parser ------------------------------------------------------------------

NESTED = b"(" * 600
HEADER_BOMBS = {
    "to-nested-comments": b"To: " + NESTED,
    "cc-nested-comments": b"Cc: " + NESTED,
    "from-nested-comments": b"From2: x\r\nFrom: " + NESTED + b"a@example.org",
    "to-nested-angles": b"To: " + b"<" * 5000,
    "to-quotes": b'To: ' + b'"' * 5001 + b"a@b.c",
    "to-huge-list": b"To: " + b", ".join(b"u%d@example.org" % i for i in range(20000)),
    "subject-encoded-words": b"Subject: " + b"=?utf-8?q?a?= " * 20000,
    "subject-bogus-charset": b"Subject: =?rot13?q?uryyb?= =?x-unknown?b?aGk=?=",
    "subject-nul-charset": b"Subject: =?utf\x00-8?q?hi?=",
    "date-huge-year": b"Date: Mon, 1 Jan 9999999999999999999999 00:00:00 +0000",
    "date-nested": b"Date: " + NESTED,
    "date-garbage": b"Date: \xff\xfe\x00\x01",
    "message-id-huge": b"Message-ID: <" + b"x" * 5000 + b"@example.org>",
    "references-many": b"References: " + b" ".join(b"<r%d@x>" % i for i in range(50000)),
    "in-reply-to-nested": b"In-Reply-To: " + b"<" * 3000,
    "content-type-nested": b"Content-Type: text/plain; charset=" + NESTED,
    "content-type-params": b"Content-Type: text/plain; " + b"a=b; " * 20000,
    "disposition-rfc2231": b"Content-Disposition: inline; filename*=rot13''uryyb.txt",
    "header-without-colon-value": b"X-Empty:",
    "folded-forever": b"X-Long: a" + b"\r\n b" * 20000,
    "8bit-header": b"X-Raw: \xe9\xe8\xff\xfe caf\xc3\xa9",
}


@pytest.mark.parametrize("name", sorted(HEADER_BOMBS))
def test_every_header_parser_is_bounded(name: str) -> None:
    line = HEADER_BOMBS[name]
    mid = "<h@example.org>" if not line.startswith(b"Message-ID") else "<x@y>"
    raw = with_header(line, mid) if not line.startswith(b"Message-ID") else (
        b"From: a@example.org\r\nSubject: s\r\n" + line + b"\r\n\r\nbody\r\n")
    mail = parse_mail(raw)
    # the lazily parsed headers, as the reply channel reads them
    assert isinstance(mail.to, tuple) and isinstance(mail.cc, tuple)
    assert isinstance(mail.parent_ids, tuple)
    assert len(mail.message_id) <= 500
    assert mail.subject == printable(mail.subject)


def test_the_poison_to_header_parses_with_the_plain_pattern() -> None:
    raw = with_header(b"To: " + NESTED + b" bob@example.org, Carol <carol@example.org>")
    mail = parse_mail(raw)
    assert mail.to == ("bob@example.org", "carol@example.org")


def test_a_huge_date_is_no_date() -> None:
    mail = parse_mail(with_header(HEADER_BOMBS["date-huge-year"]))
    assert mail.date is None and "InvalidDate" in mail.defects


# -- every charset path ---------------------------------------------------------------------

BOGUS_CHARSETS = ["rot13", "rot_13", "base64", "hex", "zlib", "uu", "bz2", "punycode",
                  "quopri", "utf-8\x00", "\x00", "idna", "x-unknown-9", "utf-8; x=y",
                  "a" * 300, "unicode_internal", "mbcs", "undefined", "\udcff"]


@pytest.mark.parametrize("charset", BOGUS_CHARSETS)
@pytest.mark.parametrize("layout", ["single", "multipart", "html"])
def test_bogus_charsets_fall_back(charset: str, layout: str) -> None:
    body = "Caf\u00e9 proxy question: how do I set it up?".encode()
    cs = charset.encode("latin-1", "surrogateescape") if charset.isascii() or "\udcff" in \
        charset else charset.encode()
    if layout == "single":
        raw = (b"From: a@example.org\r\nSubject: q\r\nMessage-ID: <c@x>\r\n"
               b"Content-Type: text/plain; charset=\"" + cs + b"\"\r\n\r\n" + body)
    elif layout == "html":
        raw = (b"From: a@example.org\r\nSubject: q\r\nMessage-ID: <c@x>\r\n"
               b"Content-Type: text/html; charset=" + cs + b"\r\n\r\n<p>" + body + b"</p>")
    else:
        raw = (b"From: a@example.org\r\nSubject: q\r\nMessage-ID: <c@x>\r\n"
               b"MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=B\r\n\r\n"
               b"--B\r\nContent-Type: text/plain; charset=" + cs + b"\r\n"
               b"Content-Transfer-Encoding: base64\r\n\r\n" + base64.encodebytes(body)
               + b"--B--\r\n")
    mail = parse_mail(raw)
    assert "proxy question" in mail.text
    if charset not in ("idna", "undefined", "utf-8; x=y") and not charset.startswith("a"):
        assert any(d.startswith(("UnknownCharset", "UndecodableBytes", "WrongCharset"))
                   for d in mail.defects) or "Caf\u00e9" in mail.text


def test_undecodable_bytes_in_a_declared_charset_are_replaced() -> None:
    raw = (b"From: a@example.org\r\nSubject: q\r\nMessage-ID: <c@x>\r\n"
           b"Content-Type: text/plain; charset=utf-8\r\n\r\nproxy \xff\xfe\xc3 question")
    mail = parse_mail(raw)
    assert "proxy" in mail.text and "question" in mail.text


def test_control_characters_never_reach_a_title() -> None:
    subject = "=?utf-8?b?" + base64.b64encode(
        "Bell\x07 and \u202eevil\u202c \x1b[31mred\x00 \u2066x\u2069".encode()).decode() + "?="
    mail = parse_mail(make_mail("Body?", subject="placeholder").replace(
        b"Subject: placeholder", b"Subject: " + subject.encode()))
    assert mail.subject == "Bell and evil [31mred x"
    family = "family \U0001f468\u200d\U0001f469 ok"
    assert printable(family) == family


# -- nesting and size bombs ---------------------------------------------------------------------

def test_nested_blockquotes_convert_to_quoted_text() -> None:
    html = "<p>My answer</p>" + "<blockquote>" * 60_000 + "deep" + "</blockquote>" * 60_000
    text = html_to_text(html)
    assert text.splitlines() == ["My answer", "> deep"]


@pytest.mark.parametrize("html", [
    "<div>" * 100_000, "<" * 200_000, "<a" * 100_000, "<!--" * 100_000, "<!" * 100_000,
    "<script>" * 50_000, "<head>" * 50_000 + "x", "&" * 100_000 + "#" * 1000,
    "&#99999999999999;" * 1000, "<p " + "a=" * 100_000, "</blockquote>" * 50_000 + "x",
])
def test_html_bombs_convert(html: str) -> None:
    assert isinstance(html_to_text(html), str)


def test_html_keeps_what_a_reader_sees() -> None:
    html = ("<html><head><title>T</title><style>p{}</style></head><body>"
            "<p>Hello&nbsp;there &amp; welcome</p><script>alert(1)</script>"
            "<img src='http://tracker.example/p.gif'>Line<br>next<br><br>para"
            "<blockquote>On Monday Bob wrote:<br>old text</blockquote><ul><li>one<li>two</ul>"
            "</body></html>")
    assert html_to_text(html) == ("Hello there & welcome\nLine\nnext\n\npara\n"
                                  "> On Monday Bob wrote:\n> old text\none\ntwo")


def test_an_html_bomb_mail_parses() -> None:
    html = "<blockquote>" * 60_000 + "I need help" + "</blockquote>" * 60_000
    raw = make_mail("", html=html, subject="Nested")
    assert len(raw) > 1_000_000
    mail = parse_mail(raw)
    assert mail.html_only and "I need help" in mail.text


def test_deeply_nested_multipart_parses_or_is_refused() -> None:
    depth = 2000
    head = b"From: a@example.org\r\nSubject: nest\r\nMessage-ID: <n@x>\r\n"
    parts = b"".join(b"Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n" % (i, i)
                     for i in range(depth))
    raw = head + parts + b"Content-Type: text/plain\r\n\r\ninner text\r\n"
    try:
        mail = parse_mail(raw)
    except UnreadableMail as exc:
        assert exc.reason
    else:
        assert isinstance(mail.text, str)


def test_many_parts_parse() -> None:
    head = (b"From: a@example.org\r\nSubject: parts\r\nMessage-ID: <p@x>\r\n"
            b"Content-Type: multipart/mixed; boundary=B\r\n\r\n")
    part = b"--B\r\nContent-Type: application/octet-stream; name=f.bin\r\n\r\nxx\r\n"
    mail = parse_mail(head + b"--B\r\nContent-Type: text/plain\r\n\r\nthe text\r\n"
                      + part * 5000 + b"--B--\r\n")
    assert mail.text.strip() == "the text" and len(mail.attachments) == 5000


def test_oversized_mail_is_refused_unread() -> None:
    with pytest.raises(UnreadableMail, match="over the limit"):
        parse_mail(make_mail("x" * 5000), max_bytes=2048)


# -- the pipeline goes on ---------------------------------------------------------------------

async def test_hostile_suite_through_the_pipeline_never_stops(pipeline: MailPipeline) -> None:
    mails = [with_header(line, f"<bomb-{i}@example.org>")
             for i, line in enumerate(HEADER_BOMBS.values())
             if not line.startswith(b"Message-ID")]
    mails += [make_mail("", html="<blockquote>" * 60_000 + "help" + "</blockquote>" * 60_000,
                        message_id="<html-bomb@x>")]
    mails += [raw.replace(b"<c@x>", b"<cs-%d@x>" % i) for i, raw in enumerate(
        (b"From: a@example.org\r\nSubject: q\r\nMessage-ID: <c@x>\r\nContent-Type: text/plain;"
         b" charset=" + cs.encode("latin-1") + b"\r\n\r\nHow do I set up the proxy?")
        for cs in ("rot13", "base64", "hex", "zlib", "uu", "bz2", "punycode", "utf-8\x00"))]
    for index, raw in enumerate(mails):
        await pipeline.process("hostile", str(index), raw)
    quarantined = pipeline.state.quarantined()
    assert [q.reason for q in quarantined] == []
    assert pipeline.summary.counts["read"] == len(mails)


async def test_a_poison_mail_does_not_hold_up_the_answer_behind_it(
        runtime: HubRuntime) -> None:
    ticket, _ = runtime.tickets.ask(SYSTEM, TicketDraft(
        kind=Kind.QUESTION, title="Which port?", body="", assignee="bob@example.org"))
    reader = ReplyReader(runtime.tickets, key=KEY, responders={}, notify={})
    pipeline = make_pipeline(runtime, RulesExtractor(), reply_handler=reader.handle)
    token = sign(KEY, ticket.id, "bob@example.org")
    poison = with_header(POISON_TO, "<poison@example.org>")
    answer = make_mail("Port 8443.", sender="bob@example.org",
                       to=f"reply+{token}@hub.example", subject=f"Re: Which port? [#{ticket.id}]",
                       message_id="<answer@example.org>")
    assert await pipeline.process("box", "1", poison) != "quarantined"
    assert await pipeline.process("box", "2", answer) == "replies"
    assert runtime.tickets.get(ticket.id).status == Status.ANSWERED
    assert await pipeline.process("box", "1", poison) == "skipped"  # a re-run goes past it


async def test_a_mail_that_still_fails_is_quarantined_and_the_run_goes_on(
        runtime: HubRuntime) -> None:
    def broken_reply_check(mail: object) -> bool:
        raise RecursionError("maximum recursion depth exceeded")

    pipeline = make_pipeline(runtime, RulesExtractor(), reply_handler=broken_reply_check)
    outcome = await pipeline.process("box", "1", make_mail("How do I?", subject="Help"))
    assert outcome == "quarantined"
    [item] = pipeline.state.quarantined()
    assert item.reason.startswith("reply check failed: RecursionError")


# -- spam and bulk --------------------------------------------------------------------------

@pytest.mark.parametrize("headers,ignored", [
    ({"X-Spam-Flag": "YES"}, True),
    ({"X-Spam-Status": "Yes, score=12.3 required=5.0"}, True),
    ({"X-Spam-Status": "No, score=0.1 required=5.0"}, False),
    ({"Precedence": "bulk"}, True),
    ({"Precedence": "junk"}, True),
    ({"Precedence": "bulk", "List-Id": "<ilug.linux.ie>"}, False),
    ({"Precedence": "bulk", "X-BeenThere": "ilug@linux.ie"}, False),
    ({"Precedence": "list"}, False),
])
async def test_spam_and_bulk_are_ignored(pipeline: MailPipeline, headers: dict[str, str],
                                         ignored: bool) -> None:
    raw = make_mail("I have a problem with my proxy, how do I fix it?",
                    subject="Proxy problem", headers=headers)
    outcome = await pipeline.process("box", "1", raw)
    issues = pipeline.tickets.list(TicketQuery(created_by="mail")).items
    if ignored:
        assert outcome == "ignored" and issues == []
        record = pipeline.state.get("<m1@example.org>")
        assert record is not None and record.ops[0]["op"] == "ignore"
    else:
        assert outcome == "added" and len(issues) == 1


async def test_bulk_in_a_thread_is_read(pipeline: MailPipeline) -> None:
    await pipeline.process("box", "1", make_mail("How do I fix my proxy?", subject="Proxy"))
    reply = make_mail("Set http_proxy in your environment, that should do it.",
                      subject="Re: Proxy", sender="bob@example.org", message_id="<m2@x>",
                      in_reply_to="<m1@example.org>", headers={"Precedence": "bulk"})
    assert await pipeline.process("box", "2", reply) == "answered"


async def test_ignoring_spam_is_a_setting(runtime: HubRuntime) -> None:
    pipeline = MailPipeline(runtime.tickets, make_pipeline(runtime, RulesExtractor()).state,
                            RulesExtractor(), runtime.clock, ignore=())
    raw = make_mail("I have a problem with my proxy, how do I fix it?", subject="Proxy",
                    headers={"X-Spam-Flag": "YES"})
    assert await pipeline.process("box", "1", raw) == "added"

