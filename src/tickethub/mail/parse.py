"""Raw mail bytes → :class:`ParsedMail`, with the standard library's modern email API.

Contract:

* headers are decoded (RFC 2047, any charset Python knows); bodies are decoded with their
  declared charset, an unknown or wrong one falls back to UTF-8 then Latin-1 and is noted
  in ``defects`` — a mail is never lost to a charset;
* the text is the first ``text/plain`` part, else the first ``text/html`` part turned into
  text (nothing remote fetched); other parts are listed as attachments (name, type, size);
* a mail without a Message-ID gets a stable one derived from its bytes, so ingesting it
  twice still finds it; ``message_id_synthesized`` says so;
* every header parser is bounded: a header value is cut at ``MAX_HEADER_CHARS`` before
  it is parsed, and a parser that fails on it (``RecursionError`` on 600 nested
  parentheses, an overflowing date, a charset that is no text encoding) falls back — the
  addresses found by a plain pattern, no date, the raw value — and notes a defect;
* bogus charsets (``rot13``, ``base64``, ``zlib``, a name with a NUL, ...) are not text
  encodings: the body is decoded as UTF-8, else with replacement characters, and the
  charset is noted in ``defects``;
* the subject has control and bidirectional-override characters removed
  (:func:`printable`);
* what cannot be read as mail at all raises :class:`UnreadableMail` with the reason; the
  caller quarantines it and goes on.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from email.header import decode_header, make_header
from email.message import EmailMessage
from email.parser import Parser
from email.policy import EmailPolicy
from email.utils import getaddresses, parseaddr, parsedate_to_datetime

from tickethub.mail.html_text import html_to_text
from tickethub.mail.quotes import own_text
from tickethub.mail.threads import is_reply_subject

_SURROGATES = re.compile("[\udc80-\udcff]")
_MSGID = re.compile(r"<([^<>\s]+)>")
_BARE_MSGID = re.compile(r"^[^<>\s@]+@[^<>\s@]+$")
_PLAIN_ADDRESS = re.compile(r"[\w.!#$%&'*+/=?^`{|}~-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})*")
MAX_TEXT_CHARS = 200_000
MAX_HEADER_CHARS = 16_384
"""A header value is cut here before any parser sees it."""
MAX_MESSAGE_ID_CHARS = 400
"""A longer Message-ID is replaced by a stable digest of it (the database keeps 500)."""


class _MailPolicy(EmailPolicy):
    """The modern policy (``EmailMessage``, ``utf8`` aware), with header values returned
    as decoded strings (RFC 2047 decoded, raw 8-bit bytes read as UTF-8 or Latin-1)
    instead of structured header objects, whose parser costs more than the rest of the
    mail put together; addresses and dates are parsed by ``email.utils`` on demand."""

    def header_fetch_parse(self, name: str, value: str) -> str:
        return decode_header_value(value)


def decode_header_value(value: str) -> str:
    """One header value, unfolded and decoded (see :class:`_MailPolicy`); cut at
    ``MAX_HEADER_CHARS``; never raises."""
    value = value[:MAX_HEADER_CHARS]
    value = "".join(value.splitlines()) if "\n" in value else value
    if not value.isascii() and _SURROGATES.search(value):
        raw = value.encode("ascii", "surrogateescape")
        try:
            value = raw.decode("utf-8")
        except UnicodeDecodeError:
            value = raw.decode("latin-1")
    if "=?" in value:
        with contextlib.suppress(Exception):  # malformed encoded-word, unknown charset: raw
            value = str(make_header(decode_header(value)))
    return value.strip()


POLICY = _MailPolicy()
_PARSER = Parser(_class=EmailMessage, policy=POLICY)
_BLANK_LINE = re.compile(r"\n\r?\n")


def _parse_message(raw: bytes) -> EmailMessage:
    """``BytesParser(policy=POLICY).parsebytes(raw)`` (see :func:`_parse_head`)."""
    msg, text = _parse_head(raw)
    return msg if text is None else _parse_whole(text)


def _parse_head(raw: bytes) -> tuple[EmailMessage, str | None]:
    """The message as ``BytesParser(policy=POLICY).parsebytes(raw)`` reads it, without the
    standard parser's walk over every body line of a single-part mail (most mail, and
    most of its bytes): ``(message, None)``; or, for a ``multipart/*`` or ``message/*``
    mail, ``(its headers, the decoded text to parse whole for its body)``.

    The header block — up to the first blank line — is parsed alone; when it parses
    cleanly to the blank line (nothing left over for a body: no line that ended the
    headers early, no envelope line pushed back), its headers and defects are the whole
    parse's, and for a mail that is not ``multipart/*`` or ``message/*`` the parser would
    have taken the rest, unchanged, as the payload, so it is set as is. Anything else is
    parsed whole, as before."""
    text = raw.decode("ascii", "surrogateescape")  # what BytesParser does first
    blank = _BLANK_LINE.search(text)
    if blank is not None:
        msg = _PARSER.parsestr(text[: blank.end()], headersonly=True)
        assert isinstance(msg, EmailMessage)
        if msg._payload == "":  # type: ignore[attr-defined]  # nothing left over
            if msg.get_content_maintype() in ("multipart", "message"):
                return msg, text
            msg._payload = text[blank.end():]  # type: ignore[attr-defined]
            return msg, None
    return _parse_whole(text), None


def _parse_whole(text: str) -> EmailMessage:
    msg = _PARSER.parsestr(text)
    assert isinstance(msg, EmailMessage)
    return msg


class UnreadableMail(Exception):
    """This input cannot be read as a mail; ``reason`` says why (kept in quarantine)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Attachment:
    filename: str | None
    content_type: str
    size: int


@dataclass(frozen=True, slots=True)
class ParsedMail:
    message_id: str
    subject: str
    from_addr: str
    from_name: str
    text: str
    own_text: str
    in_reply_to: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    to_header: str = ""
    cc_header: str = ""
    date: datetime | None = None
    html_only: bool = False
    attachments: tuple[Attachment, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)
    defects: tuple[str, ...] = ()
    size: int = 0
    message_id_synthesized: bool = False
    body_read: bool = field(default=True, repr=False, compare=False)
    """False: parsed without its body (``parse_mail``'s ``skip_body``); the text is empty."""

    @property
    def to(self) -> tuple[str, ...]:
        """Addresses in To (parsed on demand: long lists cost more than the rest)."""
        return _addresses(self.to_header)

    @property
    def cc(self) -> tuple[str, ...]:
        return _addresses(self.cc_header)

    @property
    def parent_ids(self) -> tuple[str, ...]:
        """References then In-Reply-To, oldest first, without repeats or self."""
        seen: dict[str, None] = {}
        for mid in (*self.references, *self.in_reply_to):
            if mid != self.message_id:
                seen.setdefault(mid, None)
        return tuple(seen)

    @property
    def is_automatic(self) -> bool:
        """Auto-replies and bounces (RFC 3834 and common practice). Mailing-list mail
        (``Precedence: bulk/list``) is people writing, so it is not automatic."""
        auto = self.headers.get("auto-submitted", "no").lower()
        prec = self.headers.get("precedence", "").lower()
        return auto not in ("", "no") or prec in ("junk", "auto_reply") or bool(
            self.headers.get("x-autoreply") or self.headers.get("x-autorespond"))


_KEPT_HEADERS = ("auto-submitted", "precedence", "x-autoreply", "x-autorespond", "list-id",
                 "x-tickethub-token", "delivered-to", "reply-to", "x-mailer", "x-spam-flag",
                 "x-spam-status", "list-post", "list-unsubscribe", "mailing-list",
                 "x-mailing-list", "x-beenthere", "x-loop")
_WANTED = frozenset((*_KEPT_HEADERS, "subject", "message-id", "from", "to", "cc", "date",
                     "in-reply-to", "references", "content-type", "content-disposition"))
_CHARSET = re.compile(r"charset\s*=\s*\"?([^\";\s]+)", re.IGNORECASE)


def message_ids(value: str | None) -> tuple[str, ...]:
    """The Message-IDs in a References/In-Reply-To value, in order, normalized to <...>."""
    if not value:
        return ()
    found = _MSGID.findall(value[:MAX_HEADER_CHARS])
    if not found and _BARE_MSGID.match(value.strip()):
        found = [value.strip()]
    return tuple(f"<{m}>" if len(m) <= MAX_MESSAGE_ID_CHARS else
                 "<" + hashlib.sha256(m.encode("utf-8", "replace")).hexdigest()[:32]
                 + "@long.tickethub.invalid>" for m in found)


def printable(text: str) -> str:
    """``text`` without control characters (BEL, ESC, NUL, ...), bidirectional overrides
    and other invisible format characters (U+202E, U+2066, ...): what is safe to show as
    a title. Joiners (U+200C, U+200D, used in emoji and Indic scripts) are kept."""
    if text.isprintable():
        return text
    return "".join(ch for ch in text if ch.isprintable() or ch in _KEEP_INVISIBLE or (
        unicodedata.category(ch) == "Zs")).strip()


_KEEP_INVISIBLE = frozenset("\u200c\u200d")


def parse_mail(raw: bytes, *, max_bytes: int | None = None,
               skip_body: Callable[[ParsedMail], bool] | None = None) -> ParsedMail:
    """Parse one raw mail; raises :class:`UnreadableMail` (see the module contract).

    ``skip_body``: asked with the mail read from its headers alone (no text yet); when it
    answers yes the body is not read at all — no decoding, no HTML → text, no quote
    stripping — and the mail comes back with ``body_read`` False and empty ``text``,
    ``own_text`` and ``attachments``. The pipeline uses it for mail it will only record
    as ignored (spam, bulk: ``mail.screening``), which is most of a real mailbox."""
    if max_bytes is not None and len(raw) > max_bytes:
        raise UnreadableMail(f"mail is {len(raw)} bytes, over the limit of {max_bytes}")
    if not raw.strip():
        raise UnreadableMail("empty input")
    head = raw[:4096]
    if b":" not in head.split(b"\n\n", 1)[0] and b":" not in head.split(b"\r\n\r\n", 1)[0]:
        raise UnreadableMail("no header lines: this is not a mail")
    try:
        msg, whole_text = _parse_head(raw)
    except Exception as exc:  # the parser is lenient; this is truly broken input
        raise UnreadableMail(f"MIME parser failed: {type(exc).__name__}: {exc}") from exc
    defects: list[str] = []  # the sender's, the body's
    found: dict[str, str] = {}
    for name, value in msg.raw_items():
        key = name.lower()
        if key in _WANTED and key not in found:
            found[key] = value
    if not msg.keys():
        raise UnreadableMail("no headers")

    def header(name: str) -> str:
        value = found.get(name)
        return decode_header_value(value) if value else ""

    subject = header("subject")
    found_ids = message_ids(header("message-id"))
    synthesized = not found_ids
    message_id = found_ids[0] if found_ids else (
        "<" + hashlib.sha256(raw).hexdigest()[:32] + "@synthesized.tickethub.invalid>")
    from_name, from_addr = _sender(header("from"), defects)
    date = None
    date_defects: list[str] = []
    raw_date = header("date")
    if raw_date:
        try:
            date = parsedate_to_datetime(raw_date[:200])
        except Exception:  # TypeError, ValueError, OverflowError (year 9999999999), ...
            date_defects.append("InvalidDate")
    headers = {name: value for name in _KEPT_HEADERS if (value := header(name))}
    in_reply_to = message_ids(header("in-reply-to"))
    references = message_ids(header("references"))
    subject = printable(" ".join(subject.split()))
    mail = ParsedMail(
        message_id=message_id,
        subject=subject,
        from_addr=from_addr.strip().lower(),
        from_name=printable(from_name.strip()),
        text="",
        own_text="",
        in_reply_to=in_reply_to,
        references=references,
        to_header=header("to"),
        cc_header=header("cc"),
        date=date,
        headers=headers,
        defects=tuple(dict.fromkeys(_defects(msg) + defects + date_defects)),
        size=len(raw),
        message_id_synthesized=synthesized,
        body_read=False,
    )
    if skip_body is not None and skip_body(mail):
        return mail  # a multipart mail's parts are not even parsed
    if whole_text is not None:
        try:
            msg = _parse_whole(whole_text)
        except Exception as exc:  # the parser is lenient; this is truly broken input
            raise UnreadableMail(
                f"MIME parser failed: {type(exc).__name__}: {exc}") from exc
    parsed_defects = _defects(msg)  # before decoding adds its own to the message
    text, html_only, attachments = _body(msg, defects, found)
    is_reply = bool(in_reply_to or references) or is_reply_subject(subject)
    return replace(
        mail, text=text, own_text=own_text(text, reply=is_reply), html_only=html_only,
        attachments=tuple(attachments),
        defects=tuple(dict.fromkeys(parsed_defects + defects + date_defects)), body_read=True)


def _defects(msg: EmailMessage) -> list[str]:
    return [type(d).__name__ for d in msg.defects]


def _addresses(value: str) -> tuple[str, ...]:
    """The addresses in a To/Cc value; never raises (see the module contract)."""
    value = value[:MAX_HEADER_CHARS]
    try:
        return tuple(addr.lower() for _, addr in getaddresses([value]) if "@" in addr)
    except Exception:  # RecursionError on nested comments, parser bugs: plain pattern
        return tuple(dict.fromkeys(m.lower() for m in _PLAIN_ADDRESS.findall(value)))


def _sender(value: str, defects: list[str]) -> tuple[str, str]:
    """(display name, address) of a From value; never raises."""
    try:
        return parseaddr(value[:MAX_HEADER_CHARS])
    except Exception:
        defects.append("UnparsableFrom")
        found = _PLAIN_ADDRESS.search(value[:MAX_HEADER_CHARS])
        return "", found.group(0) if found else ""


def decode_part(part: EmailMessage, defects: list[str], charset: str | None = None) -> str:
    """The text of one leaf part; unknown charsets fall back without losing the text."""
    try:
        payload = part.get_payload(decode=True)
    except Exception:
        payload = None
    if payload is None:
        raw = part.get_payload()
        return raw if isinstance(raw, str) else ""
    if not isinstance(payload, bytes):
        return str(payload)
    if charset is None:
        try:
            charset = part.get_content_charset()
        except Exception:
            charset = None
    charset = (charset or "us-ascii").strip().strip('"').lower()
    charset = _SUPERSETS.get(charset, charset)
    if not _is_text_encoding(charset):
        defects.append(f"UnknownCharset:{charset[:40]!r}" if not charset.isprintable()
                       else f"UnknownCharset:{charset[:40]}")
        charset = "utf-8"
    try:
        return payload.decode(charset)
    except Exception:  # UnicodeDecodeError; UnicodeError from punycode, idna, ...
        pass
    if charset not in ("utf-8", "us-ascii", "ascii"):
        try:
            text = payload.decode("utf-8")
            defects.append(f"WrongCharset:{charset[:40]}")
            return text
        except UnicodeDecodeError:
            pass
    defects.append(f"UndecodableBytes:{charset[:40]}")
    if charset in ("us-ascii", "ascii"):  # undeclared 8-bit: most often UTF-8, else Latin-1
        charset = "utf-8" if _mostly_utf8(payload) else "cp1252"
    try:
        return payload.decode(charset, errors="replace")
    except Exception:  # a codec that fails even with errors="replace"
        return payload.decode("latin-1")


def _is_text_encoding(charset: str) -> bool:
    """A codec that turns bytes into text: not ``rot13``, ``base64``, ``hex``, ``zlib``,
    ``uu``, ``bz2`` (bytes↔bytes or str↔str transforms), not a name with a NUL."""
    if not charset or len(charset) > 64 or not charset.isprintable():
        return False
    try:
        info = codecs.lookup(charset)
    except (LookupError, ValueError, TypeError):
        return False
    return bool(getattr(info, "_is_text_encoding", True))


# Mail that declares a charset often uses its common superset (Outlook, old Chinese mail).
_SUPERSETS = {"gb2312": "gb18030", "gbk": "gb18030", "x-gbk": "gb18030",
              "iso-8859-1": "cp1252", "latin1": "cp1252", "ks_c_5601-1987": "cp949",
              "shift_jis": "cp932", "euc-kr": "cp949", "iso-8859-8-i": "iso-8859-8"}


def _mostly_utf8(payload: bytes) -> bool:
    text = payload.decode("utf-8", errors="replace")
    return text.count("\ufffd") * 20 < max(1, sum(1 for b in payload if b > 127))


def _body(msg: EmailMessage, defects: list[str],
          top: dict[str, str]) -> tuple[str, bool, list[Attachment]]:
    if not msg.is_multipart():  # most mail: one part, its headers already at hand
        content_type = top.get("content-type", "text/plain")
        disposition = top.get("content-disposition", "").lower()
        lowered = content_type.lower()
        if "attachment" not in disposition and "name" not in disposition + lowered:
            ctype = lowered.split(";")[0].strip() or "text/plain"
            found = _CHARSET.search(content_type)
            charset = found.group(1) if found else None
            if ctype == "text/html":
                return _html_text(decode_part(msg, defects, charset)), True, []
            if ctype.startswith("text/") or "/" not in ctype:
                return decode_part(msg, defects, charset)[:MAX_TEXT_CHARS], False, []
    plain: str | None = None
    html: str | None = None
    attachments: list[Attachment] = []
    try:
        parts = list(msg.walk())
    except Exception as exc:
        defects.append(f"BrokenStructure:{type(exc).__name__}")
        parts = [msg]
    for part in parts:
        if part.is_multipart():
            continue
        ctype = part.get_content_type()
        disposition = (part.get("content-disposition") or "").split(";")[0].strip().lower()
        filename = _filename(part)
        if disposition != "attachment" and filename is None and ctype == "text/plain":
            if plain is None:
                plain = decode_part(part, defects)
            continue
        if disposition != "attachment" and filename is None and ctype == "text/html":
            if html is None:
                html = decode_part(part, defects)
            continue
        if part is msg and ctype.startswith("text/"):
            plain = decode_part(part, defects)
            continue
        try:
            size = len(part.get_payload(decode=True) or b"")
        except Exception:
            size = 0
        attachments.append(Attachment(filename, ctype, size))
    if plain is not None and plain.strip():
        return plain[:MAX_TEXT_CHARS], False, attachments
    if html is not None:
        return _html_text(html), True, attachments
    return (plain or "")[:MAX_TEXT_CHARS], False, attachments


def _html_text(html: str) -> str:
    """The text of an HTML body, at most ``MAX_TEXT_CHARS`` (converting only the head of
    it: markup is longer than the text it holds)."""
    return html_to_text(html[: MAX_TEXT_CHARS * 4])[:MAX_TEXT_CHARS]


def _filename(part: EmailMessage) -> str | None:
    try:
        return part.get_filename()
    except Exception:
        return None
