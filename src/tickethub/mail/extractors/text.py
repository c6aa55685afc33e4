"""The author's own text of a mail as the extractors read it: cleaned of footers,
signatures and leftover quotes (``clean``), cut into sentences with the line wrapping
undone (``sentences_of``), and searched for cues (``first_hit``, ``hits``, ``negated``)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from typing import SupportsIndex, overload

from tickethub.mail.extractors.cues import NEGATED
from tickethub.mail.operations import MAX_EVIDENCE

MAX_CHARS = 8000  # cues are read in the first 8,000 characters of the author's own text
_LETTER = re.compile(r"[^\W\d_]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
_LIST_FOOTER = re.compile(
    r"mailing list|listinfo|^_{5,}|sponsored by|to unsubscribe|your use of yahoo|groups sponsor|"
    r"\(un\)subscription|list maintainer|users' group", re.MULTILINE)


def clean(text: str) -> str:
    """The text without mailing-list footer lines, and without a short signature
    written as "--Name" (no space after the dashes) in its last lines."""
    lines = [line for line in _drop_header_block(text.splitlines())
             if not QUOTE_LINE.match(line)]
    for i in range(len(lines) - 1, max(0, len(lines) - 4) - 1, -1):
        if _DASH_SIGNATURE.match(lines[i]):
            lines = lines[:i]
            break
    for i in range(max(1, len(lines) - 15), len(lines)):  # a signature boxed in "====="
        if _RULE_LINE.match(lines[i]):
            lines = lines[:i]
            break
    if not _LIST_FOOTER.search(text.lower()):
        return "\n".join(lines)
    for i in range(max(0, len(lines) - 8), len(lines)):  # a footer block: the marker line
        if _LIST_FOOTER.search(lines[i].lower()):        # and what follows it (the sponsor's
            lines = lines[:i]                            # slogan and link)
            break
    return "\n".join(line for line in lines if not _LIST_FOOTER.search(line.lower()))


def _drop_header_block(lines: list[str]) -> list[str]:
    """Without a quoted mail's header lines ("Date: ...", "From: ...", "Message-ID: ...")
    at the top: some mailers put the replied-to mail's headers there instead of "wrote:"."""
    start = 0
    while start < len(lines) and start < 8 and (
            _HEADER_LINE.match(lines[start]) or (start and not lines[start].strip())):
        start += 1
    return lines[start:] if start >= 2 else lines


# Quoted text that the reply-parser leaves: "Name> " (also indented), "| " and ") "
# quotes, and the attribution lines "[Name]" and "... wrote:" / "wrote*:" / "writes:".
QUOTE_LINE = re.compile(
    r"^\s{0,8}[A-Za-z][\w.-]{0,19}>(\s|$)|^\s*[|)](\s|$)|^\s*\[[A-Z][\w .'-]{1,40}\]\s*$|"
    r".*\b(wrote|writes|said)\*?:\s*$")
_HEADER_LINE = re.compile(r"^(Date|From|To|Cc|Sent|Subject|Message-ID|In-Reply-To):\s", re.I)
_DASH_SIGNATURE = re.compile(r"^\s*--[^\W\d_]")
_RULE_LINE = re.compile(r"^\s*(={10,}|\*{10,}|#{10,})\s*$")


class Sentences(list[str]):
    """The sentences of a text (line wrapping undone), with their lower-cased forms and
    all of them lower-cased in one string, so a cue is screened with one search."""

    def __init__(self, items: Iterable[str]) -> None:
        super().__init__(items)
        self.lowered = [s.lower() for s in self]
        self.joined = "\n".join(self.lowered)
        self.starts: list[int] = []
        at = 0
        for lowered in self.lowered:
            self.starts.append(at)
            at += len(lowered) + 1

    def first_from(self, pattern: re.Pattern[str]) -> int | None:
        """Index of the first sentence the cue matches in, found with one search of the
        joined text (then confirmed on the sentence alone), or None."""
        found = pattern.search(self.joined)
        if found is None:
            return None
        index = bisect.bisect_right(self.starts, found.start()) - 1
        for i in range(index, len(self)):  # a cue that spanned a line break: look on
            if pattern.search(self.lowered[i]):
                return i
        return None

    @overload
    def __getitem__(self, index: SupportsIndex) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sentences: ...

    def __getitem__(self, index: SupportsIndex | slice) -> str | Sentences:
        """A sentence, or a slice of them as ``Sentences``."""
        if isinstance(index, slice):
            return Sentences(list.__getitem__(self, index))
        return list.__getitem__(self, index)


def sentences_of(text: str) -> Sentences:
    """Sentences, with the line wrapping of mail undone (a sentence may span lines). A
    run longer than an evidence quote may be (a pasted log, a URL list with no full stop)
    is cut into pieces at word boundaries, so whichever sentence an operation quotes fits
    :class:`Operation`'s ``evidence``."""
    found: list[str] = []
    for part in _SENTENCE_END.split(text[:MAX_CHARS]):
        if _LETTER.search(part):
            found.extend(_pieces(" ".join(part.split())))
    return Sentences(found)


def _pieces(sentence: str, limit: int = MAX_EVIDENCE) -> list[str]:
    """``sentence`` in pieces of at most ``limit`` characters, cut at spaces (a word
    longer than ``limit`` is cut where it must)."""
    pieces = []
    while len(sentence) > limit:
        cut = sentence.rfind(" ", 0, limit + 1)
        if cut <= 0:
            cut = limit
        pieces.append(sentence[:cut])
        sentence = sentence[cut:].lstrip()
    if sentence:
        pieces.append(sentence)
    return pieces


def first_hit(pattern: re.Pattern[str], sentences: Iterable[str]) -> str | None:
    if isinstance(sentences, Sentences):
        index = sentences.first_from(pattern)
        return None if index is None else sentences[index]
    for sentence in sentences:
        if pattern.search(sentence.lower()):
            return sentence
    return None


def hits(pattern: re.Pattern[str], sentences: list[str]) -> Iterable[str]:
    if not isinstance(sentences, Sentences):
        yield from (s for s in sentences if pattern.search(s.lower()))
        return
    index = sentences.first_from(pattern)
    if index is None:
        return
    yield sentences[index]
    for i in range(index + 1, len(sentences)):
        if pattern.search(sentences.lowered[i]):
            yield sentences[i]


def negated(pattern: re.Pattern[str], sentence: str) -> bool:
    """The cue is denied next to where it is found ("a cleanup which doesn't address
    this issue", "not yet fixed in CVS")."""
    lowered = sentence.lower()
    found = pattern.search(lowered)
    if found is None:
        return False
    around = lowered[max(0, found.start() - 25):found.start()] + " " + \
        lowered[found.end():found.end() + 40]  # not the cue itself ("didn't think to check")
    return bool(NEGATED.search(around))
