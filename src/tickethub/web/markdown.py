"""Markdown to safe HTML: markdown-it renders with raw HTML off, then nh3 (Ammonia)
sanitizes with an allow-list, so ticket text from anyone can be shown as Markdown."""

from __future__ import annotations

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
    """``text`` as sanitized HTML; links open outside with ``rel=noopener noreferrer``."""
    if not text:
        return Markup("")
    html = _md.render(text)
    clean = nh3.clean(html, tags=_TAGS, attributes=_ATTRIBUTES,
                      url_schemes={"http", "https", "mailto"},
                      link_rel="noopener noreferrer nofollow")
    return Markup(clean)  # sanitized above
