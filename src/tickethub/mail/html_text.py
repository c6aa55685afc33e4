"""HTML mail bodies → plain text, in one linear pass.

Contract: ``html_to_text`` never raises on malformed HTML, never touches the network
(nothing is fetched: it only reads tags and text), and costs time linear in the input
with memory bounded by it — hostile nesting (60,000 ``<blockquote>``) costs what the
same bytes of paragraphs cost. Images, scripts, styles, frames and other non-text
elements are dropped; block elements become line breaks; the text inside
``<blockquote>`` becomes ``> `` lines, so quote stripping treats it like a plain-text
quote; runs of blanks collapse.

How: one regular-expression scan for markup over the string (every pattern consumes what
it scans, so no backtracking runs past a ``<``), text taken as the slices between, a
counter instead of a tree for quote depth
and for dropped elements, and no DOM at all. The input is cut at ``max_chars`` first.
"""

from __future__ import annotations

import re
from html import unescape

MAX_HTML_CHARS = 800_000
"""Longer HTML is cut here before conversion (the mail text is capped anyway)."""

# A comment (to its end, or to the end of the input when it never closes), a declaration
# or processing instruction, or a tag (name, then anything but < or > — a ``<`` inside a
# tag ends it, which keeps the scan linear). Text is what lies between two matches.
_MARKUP = re.compile(
    r"<(?:!--.*?(?:-->|\Z)|[!?][^<>]*>?|(/?)([A-Za-z][A-Za-z0-9:-]{0,30})[^<>]*>?)",
    re.DOTALL,
)
# Raw-text elements: their content is not HTML; skip straight to the closing tag.
_RAW_END = {"script": re.compile(r"</script\s*>|\Z", re.IGNORECASE),
            "style": re.compile(r"</style\s*>|\Z", re.IGNORECASE),
            "textarea": re.compile(r"</textarea\s*>|\Z", re.IGNORECASE)}
# Elements whose content is not mail text (dropped with everything inside).
_DROP = frozenset(("head", "title", "picture", "video", "audio", "iframe", "object", "svg",
                   "noscript", "template", "math", "frameset", "noframes", "select"))
_BLOCKS = frozenset(("p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6",
                     "blockquote", "pre", "table", "section", "article", "ul", "ol", "dl",
                     "dt", "dd", "hr", "header", "footer", "address", "center", "form",
                     "fieldset", "main", "nav", "aside", "figure", "caption", "body",
                     "html"))
_SPECIAL = _DROP | _BLOCKS | frozenset(_RAW_END)
_SPACES = re.compile(r"[ \t\u00a0\r\f\v]+")
_BLANKS = re.compile(r"\n\s*\n\s*\n+")


def html_to_text(html: str, *, max_chars: int = MAX_HTML_CHARS) -> str:
    """The readable text of ``html`` (see the module contract)."""
    html = html[:max_chars]
    lines: list[str] = []   # finished lines
    line: list[str] = []    # pieces of the current line
    line_quoted = False     # the current line began inside a blockquote
    quote_depth = 0
    drop_depth = 0          # > 0: inside dropped elements
    drop_tag = ""

    def end_line() -> None:
        text = _SPACES.sub(" ", "".join(line)).strip()
        lines.append("> " + text if line_quoted and text else text)
        line.clear()

    def add_text(text: str) -> None:
        nonlocal line_quoted
        if "&" in text:
            text = unescape(text)
        for index, part in enumerate(text.split("\n")):
            if index:
                end_line()
            if part:
                if not line:
                    line_quoted = quote_depth > 0
                line.append(part)

    pos = 0
    size = len(html)
    while pos < size:
        match = _MARKUP.search(html, pos)
        if match is None:
            if not drop_depth:
                add_text(html[pos:])
            break
        if match.start() > pos and not drop_depth:
            add_text(html[pos:match.start()])
        pos = match.end()
        name = match.group(2)
        if name is None:
            continue  # comment, declaration, processing instruction
        tag = name.lower()
        if tag not in _SPECIAL:
            continue  # inline markup: <b>, <a>, <span>, <font>, ...
        closing = bool(match.group(1))
        if drop_depth:
            if tag == drop_tag:
                drop_depth += -1 if closing else 1
            elif tag == "body" and drop_tag in ("head", "title") and not closing:
                drop_depth = 0  # an unclosed <head> ends where the body starts
            continue
        if not closing:
            raw_end = _RAW_END.get(tag)
            if raw_end is not None:
                found = raw_end.search(html, pos)
                pos = found.end() if found is not None else size
                continue
            if tag in _DROP and not match.group(0).endswith("/>"):
                drop_tag, drop_depth = tag, 1
                continue
        if tag in _BLOCKS:
            if line:
                end_line()
            elif tag == "br" and lines and lines[-1] != "":
                lines.append("")  # <br><br>: keep one blank line
            if tag == "blockquote":
                quote_depth = max(quote_depth + (-1 if closing else 1), 0)
    if line:
        end_line()
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()
