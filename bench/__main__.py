"""``python -m bench``: run every bench, each on its own fresh server, and print one
combined table.

A bench is any module in this package that defines ``NAME``, ``add_arguments(parser)``
and ``async run(args)`` (see ``bench.runner``); the issue 3 core benches run first, then
the others by name. Flags: ``--quick`` for a smoke run, ``--only NAME`` / ``--skip NAME``
(repeatable) to choose, ``--list`` to show the names; any other flag goes to every bench
that declares it (e.g. ``--waiters 2000``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from pathlib import Path
from types import ModuleType

from bench.report import Row, table
from bench.runner import QUICK_ENV, parser_for, run_one

CORE = ("wake_latency", "concurrent_waiters", "ask_throughput")
_BENCH_SHAPE = (re.compile(r"^NAME = ", re.M), re.compile(r"^def add_arguments\(", re.M),
                re.compile(r"^async def run\(", re.M))


def bench_names() -> list[str]:
    """Modules of this package shaped like a bench, core ones first (found by reading the
    source, so helper scripts with their own dependencies are never imported)."""
    found = []
    for path in Path(__file__).parent.glob("*.py"):
        if path.stem.startswith("_"):
            continue
        text = path.read_text(errors="replace")
        if all(p.search(text) for p in _BENCH_SHAPE):
            found.append(path.stem)
    return [n for n in CORE if n in found] + sorted(n for n in found if n not in CORE)


def main(argv: list[str] | None = None) -> int:
    names = bench_names()
    parser = argparse.ArgumentParser(description="Run the tickethub benchmarks.")
    parser.add_argument("--quick", action="store_true",
                        default=os.environ.get(QUICK_ENV, "") not in ("", "0"),
                        help=f"CI-sized smoke run (also {QUICK_ENV}=1).")
    parser.add_argument("--only", action="append", choices=names, help="Run only this.")
    parser.add_argument("--skip", action="append", choices=names, help="Leave this out.")
    parser.add_argument("--list", action="store_true", help="Print the bench names.")
    args, rest = parser.parse_known_args(argv)
    chosen = [n for n in names
              if (not args.only or n in args.only) and n not in (args.skip or ())]
    if args.list:
        print("\n".join(names))
        return 0
    rows: list[Row] = []
    failed: list[str] = []
    for name in chosen:
        try:
            module: ModuleType = importlib.import_module(f"bench.{name}")
            bench_args, _ = parser_for([module], name).parse_known_args(rest)
            bench_args.quick = bench_args.quick or args.quick
            rows += run_one(module, bench_args)
        except Exception as exc:  # one broken bench must not hide the others' numbers
            failed.append(name)
            print(f"!! {name} failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    print()
    print(table(rows))
    missed = [f"{r.bench}/{r.metric}" for r in rows if r.met is False]
    if missed:
        print("\ngoals missed: " + ", ".join(missed))
    if failed:
        print("benches that failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
