"""The author's own text of a mail: quoted replies and signatures stripped.

mail-parser-reply (MIT) knows reply headers ("On ... wrote:", "Am ... schrieb:",
"在 ... 写道:" and many more) and signatures in many languages; on top of it, lines quoted
with ``>`` and mailing-list footers are dropped, because old list mail often quotes
without any header line.
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache

from mailparser_reply import EmailReplyParser
from mailparser_reply.parser import EmailMessage

LANGUAGES = ("en", "de", "fr", "es", "zh")
_QUOTED = re.compile(r"^\s*(>|\|>|[A-Za-z][\w.-]{0,14}>(\s|$))")  # "> ", "|> ", "Greg> "
_SIGNATURE = re.compile(r"^(-- ?|--|__+|_{10,}|-{5,})$")
_WROTE = re.compile(
    r"^(.{0,120}\b(wrote|writes|said|mentioned|schrieb|a écrit|escribió)\s*:?\s*"
    r"|.*写道[:\uff1a]?)$",
    re.IGNORECASE,
)
HEAD_CHARS = 2000
_FIRST_QUOTE = re.compile(r"^[ \t]*>", re.MULTILINE)
_OTHER_MARKS = ("#", "|", ":")
_ORIGINAL = re.compile(r"^-+\s*(Original Message|Forwarded message)\s*-+", re.IGNORECASE)


class _ReplyParser:
    """mail-parser-reply with its regexes compiled once, not once per mail."""

    def __init__(self, languages: tuple[str, ...]) -> None:
        self.languages = list(EmailReplyParser(languages=list(languages)).languages)
        template = EmailMessage(text="", languages=list(self.languages))
        self._regexes = {"_header_regex": template.HEADER_REGEX,
                         "_disclaimers_regex": template.DISCLAIMERS_REGEX,
                         "_signature_regex": template.SIGNATURE_REGEX}

    def parse_reply(self, text: str) -> str | None:
        message = EmailMessage(text=text, languages=list(self.languages), **self._regexes)
        # mail-parser-reply ships no type information; latest_reply is its str | None.
        reply: str | None = message.read().latest_reply
        return reply


@lru_cache(maxsize=1)
def _parser() -> _ReplyParser:
    return _ReplyParser(LANGUAGES)


def own_text(text: str, *, max_chars: int = 200_000, reply: bool = True) -> str:
    """What the author wrote in this mail, without quotes, reply headers and signature.

    ``reply=False`` (a mail that answers nothing: no In-Reply-To, References or "Re:")
    skips the multilingual reply-header search — there is no earlier mail to cut away —
    and only drops quoted lines, forwarded parts and the signature.
    Falls back to the whole text when stripping would leave nothing (a mail that is only
    a quote still says something by being sent)."""
    text = text[:max_chars].replace("\r\n", "\n")
    if not reply:
        kept = _strip_lines(text)
        return kept if kept.strip() else text.strip()
    head, tail = _split_head(text)
    try:
        latest = _parser().parse_reply(text=head) or ""
    except Exception:  # the parser is heuristic; a failure must not lose the mail
        latest = head
    if tail and (len(latest) >= len(head.strip()) - 2 or _ends_with_attribution(head)):
        # nothing cut in the head, or only the "... wrote:" line before a quote the author
        # answers below (interleaved): the unquoted rest is the author's
        latest = latest + "\n" + tail
    kept = _strip_lines(latest)
    return kept if kept.strip() else _strip_lines(text) or text.strip()


def _ends_with_attribution(head: str) -> bool:
    """The head ends with "... wrote:" right before the first quote, and holds no quoted
    original of its own (an "Original Message" or From:/Sent: block)."""
    last = head.rstrip().rsplit("\n", 1)[-1].strip()
    return _maybe_wrote(last) and bool(_WROTE.match(last)) and not _QUOTED_ORIGINAL.search(head)


_QUOTED_ORIGINAL = re.compile(r"^(-+\s*(Original Message|Forwarded message)|(From|Sent|Date): )",
                              re.IGNORECASE | re.MULTILINE)


def _split_head(text: str) -> tuple[str, str]:
    """The part where a reply header or signature can start the quoted rest — up to the
    first quoted line, at most ``HEAD_CHARS`` — and the remainder. The reply parser's
    cost grows with its input and the author's own text comes first, so it reads only
    the head; quoted lines further down are dropped line by line."""
    match = _FIRST_QUOTE.search(text)
    cut = min(match.start() if match else len(text), HEAD_CHARS)
    if cut >= len(text):
        return text, ""
    newline = text.rfind("\n", 0, cut)
    cut = newline + 1 if newline > 0 else cut
    return text[:cut], text[cut:]


def _strip_lines(text: str) -> str:
    """Drop quoted lines (and the "... wrote:" lines that introduce them), and everything
    from a signature separator or a forwarded/original-message marker on."""
    kept: list[str] = []
    quote_mark = ""
    lines = text.splitlines()
    in_header = False
    for i, line in enumerate(lines):
        stripped = line.rstrip()
        if in_header:  # the From:/Sent:/Subject: block of a quote put above the reply
            in_header = bool(stripped.strip())
            continue
        if not stripped:  # a blank line: none of the marks below
            kept.append(stripped)
            continue
        first = stripped[0]
        if first in "-_" and _ORIGINAL.match(stripped) and not any(k.strip() for k in kept):
            in_header = True  # the original comes first, the author's text after it
            continue
        if first in "-_" and (_SIGNATURE.match(stripped) or _ORIGINAL.match(stripped)):
            break
        if ">" in stripped[:6] and _QUOTED.match(stripped):
            continue
        if quote_mark and stripped.startswith(quote_mark):
            continue
        if _maybe_wrote(stripped) and _WROTE.match(stripped.strip()):
            following = next((x for x in itertools.islice(lines, i + 1, None) if x.strip()), "")
            if _QUOTED.match(following):
                continue  # "Bob wrote:" introducing an interleaved quote
            mark = following.lstrip()[:1]
            if mark in _OTHER_MARKS:
                quote_mark = mark  # some mailers quote with "# ", "| " or ": "
                continue
        kept.append(stripped)
    while kept and (not kept[-1].strip() or (
            _maybe_wrote(kept[-1]) and _WROTE.match(kept[-1].strip()))):
        kept.pop()
    start = 0
    while start < len(kept) and not kept[start].strip():
        start += 1
    return "\n".join(kept[start:])


_WROTE_ENDINGS = ("wrote", "writes", "said", "mentioned", "schrieb", "écrit", "escribió")
_WROTE_LAST = frozenset(":\uff1aBDESTbdestÓó")
"""Every character whose lower case ends a ``_maybe_wrote`` ending (":", U+FF1A, or the last
letter of a verb above): a line ending in anything else is no "... wrote:" line."""


def _maybe_wrote(line: str) -> bool:
    """A cheap screen before the ``_WROTE`` regex: such lines end with a colon or verb."""
    line = line.rstrip()
    if line[-1:] not in _WROTE_LAST and "写道" not in line[-12:]:
        return False  # most lines: the last character rules out every ending below
    tail = line[-12:].lower()
    return tail.endswith((":", "\uff1a")) or "写道" in tail or tail.endswith(_WROTE_ENDINGS)
