"""The author's own text of a mail: quoted replies and signatures stripped.

mail-parser-reply (MIT) knows reply headers ("On ... wrote:", "Am ... schrieb:",
"在 ... 写道:" and many more) and signatures in many languages; on top of it, lines quoted
with ``>`` and mailing-list footers are dropped, because old list mail often quotes
without any header line.
"""

from __future__ import annotations

import re
from functools import lru_cache

from mailparser_reply import EmailReplyParser

LANGUAGES = ("en", "de", "fr", "es", "zh")
_QUOTED = re.compile(r"^\s*(>|\|>|[A-Za-z]{1,3}>)")
_SIGNATURE = re.compile(r"^(-- ?|--|__+|_{10,}|-{5,})$")
_WROTE = re.compile(
    r"^(.{0,120}\b(wrote|writes|said|schrieb|a écrit|escribió)\s*:?\s*|.*写道[:\uff1a]?)$",
    re.IGNORECASE,
)
_OTHER_MARKS = ("#", "|", ":")
_ORIGINAL = re.compile(r"^-+\s*(Original Message|Forwarded message)\s*-+", re.IGNORECASE)


@lru_cache(maxsize=1)
def _parser() -> EmailReplyParser:
    return EmailReplyParser(languages=list(LANGUAGES))


def own_text(text: str, *, max_chars: int = 200_000) -> str:
    """What the author wrote in this mail, without quotes, reply headers and signature.

    Falls back to the whole text when stripping would leave nothing (a mail that is only
    a quote still says something by being sent)."""
    text = text[:max_chars].replace("\r\n", "\n")
    try:
        latest = _parser().parse_reply(text=text) or ""
    except Exception:  # the parser is heuristic; a failure must not lose the mail
        latest = text
    kept = _strip_lines(latest)
    return kept if kept.strip() else _strip_lines(text) or text.strip()


def _strip_lines(text: str) -> str:
    kept: list[str] = []
    quote_mark = ""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        stripped = line.rstrip()
        if _SIGNATURE.match(stripped) or _ORIGINAL.match(stripped):
            break
        if _QUOTED.match(stripped):
            continue
        if quote_mark and stripped.startswith(quote_mark):
            continue
        following = next((x for x in lines[i + 1:] if x.strip()), "")
        if _WROTE.match(stripped.strip()):
            if _QUOTED.match(following):
                continue  # "Bob wrote:" introducing an interleaved quote
            mark = following.lstrip()[:1]
            if mark in _OTHER_MARKS:
                quote_mark = mark  # some mailers quote with "# ", "| " or ": "
                continue
        kept.append(stripped)
    while kept and (not kept[-1].strip() or _WROTE.match(kept[-1].strip())):
        kept.pop()
    while kept and not kept[0].strip():
        kept.pop(0)
    return "\n".join(kept)
