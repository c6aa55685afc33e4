"""Markdown to safe HTML: markdown-it renders with raw HTML off, then nh3 (Ammonia)
sanitizes with an allow-list, so ticket text from anyone can be shown as Markdown."""

from __future__ import annotations

from functools import lru_cache

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_md.enable("table").enable("strikethrough")

_TAGS = {
    "a", "p", "br", "hr", "em", "strong", "del", "s", "code", "pre", "blockquote",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td",
}
_ATTRIBUTES = {"a": {"href", "title"},
               "ol": {"start"}, "th": {"align"}, "td": {"align"}}


def render(text: str | None) -> Markup:
    """``text`` as sanitized HTML; links get ``rel=noopener noreferrer nofollow``."""
    if not text:
        return Markup("")
    return Markup(_render(text))  # sanitized in _render


# Messages never change, so each text is rendered once per process (a 500-message thread
# costs ~1 s to render cold on a slow machine, a few ms warm).
@lru_cache(maxsize=20_000)
def _render(text: str) -> str:
    html = _md.render(text)
    clean = nh3.clean(html, tags=_TAGS, attributes=_ATTRIBUTES,
                      url_schemes={"http", "https", "mailto"},
                      link_rel="noopener noreferrer nofollow")
    return str(clean)
