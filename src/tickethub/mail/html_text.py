"""HTML mail bodies → plain text.

Uses selectolax (MIT, the Lexbor engine), which only parses: nothing is fetched, so
tracking pixels, remote images, stylesheets and scripts are never loaded. Images, scripts,
styles and other non-text elements are dropped before the text is taken.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser

_DROP = "script, style, head, img, picture, video, audio, iframe, object, embed, svg, noscript"
_BLOCKS = ("p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote",
           "pre", "table", "section", "article")
_SPACES = re.compile(r"[ \t\u00a0]+")
_BLANKS = re.compile(r"\n\s*\n\s*\n+")


def html_to_text(html: str) -> str:
    """The readable text of ``html``: block elements become line breaks, runs of blanks
    collapse. Never raises on malformed HTML; never touches the network."""
    tree = LexborHTMLParser(html)
    for node in tree.css(_DROP):
        node.decompose()
    for tag in _BLOCKS:
        for node in tree.css(tag):
            node.insert_after("\n")
    # Quoted parts of HTML replies are marked by <blockquote>; keep them as "> " lines so
    # quote stripping treats them like plain-text quotes.
    for node in tree.css("blockquote"):
        quoted = node.text(separator="", strip=False)
        node.replace_with("\n" + "\n".join("> " + line for line in quoted.splitlines()) + "\n")
    root = tree.body or tree.root
    text = root.text(separator="", strip=False) if root is not None else ""
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()
