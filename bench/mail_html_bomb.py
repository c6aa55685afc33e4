"""HTML mail bodies to text on hostile nesting: ``mail.html_text.html_to_text`` must be
linear in its input, however deep the nesting (issue 16: 60,000 nested ``<blockquote>``,
1.56 MB, took 201 s and 7.1 GB with the DOM-based converter).

Anchor, in the same run: the same number of bytes of flat paragraphs
(``<p>...</p>``), which any converter handles in linear time. Rows: the bomb's time
against the anchor's (goal ≤ 3x), and the growth from a quarter of the bomb to the whole
(time per byte at 60,000 levels over time per byte at 15,000; linear is 1x, the old
quadratic converter gave about 4x). Each time is the best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from typing import Any

from bench.report import Goal, Row
from bench.runner import main, size

NAME = "mail_html_bomb"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(NAME)
    group.add_argument("--levels", type=int, help="nesting depth [60000; quick 20000].")
    group.add_argument("--repeat", type=int, default=3, help="runs per time (the best).")


def bomb(levels: int) -> str:
    return "<blockquote>" * levels + "deep" + "</blockquote>" * levels


def flat(chars: int) -> str:
    unit = "<p>Some text of a paragraph.</p>\n"
    return unit * (chars // len(unit) + 1)


def best(html: str, repeat: int) -> float:
    from tickethub.mail.html_text import html_to_text

    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        html_to_text(html, max_chars=len(html))
        times.append(time.perf_counter() - started)
    return min(times)


def peak_mb(html: str) -> float:
    from tickethub.mail.html_text import html_to_text

    tracemalloc.start()
    html_to_text(html, max_chars=len(html))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 1e6


async def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    levels = size(args, "levels", 60_000, 20_000)
    whole, quarter = bomb(levels), bomb(levels // 4)
    t_whole = best(whole, args.repeat)
    t_quarter = best(quarter, args.repeat)
    t_flat = best(flat(len(whole)), args.repeat)
    growth = (t_whole / len(whole)) / (t_quarter / len(quarter))
    memory = peak_mb(whole)
    mb = len(whole) / 1e6
    rows = [
        Row(NAME, f"{levels:,} nested blockquotes ({mb:.2f} MB) → text", t_whole, "s",
            Goal("<=", 3 * t_flat), "same bytes of flat paragraphs, s", t_flat),
        Row(NAME, "time per byte, whole bomb over a quarter of it", growth, "x",
            Goal("<=", 2.0), "linear", 1.0),
        Row(NAME, "peak memory of the conversion", memory, "MB", None, "input MB", mb),
    ]
    return rows, {"levels": levels, "bytes": len(whole), "seconds": t_whole,
                  "flat_seconds": t_flat, "growth": growth, "peak_mb": memory}


if __name__ == "__main__":
    import sys

    main(sys.modules[__name__])
