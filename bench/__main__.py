"""``python -m bench``: run every bench, each on its own fresh server, and print one
combined table. ``--quick`` for a smoke run; ``--only NAME`` (repeatable) to pick."""

from __future__ import annotations

import sys

from bench import ask_throughput, concurrent_waiters, wake_latency
from bench.report import Row, table
from bench.runner import parser_for, run_one

BENCHES = (wake_latency, concurrent_waiters, ask_throughput)


def main(argv: list[str] | None = None) -> int:
    parser = parser_for(BENCHES, "Run the tickethub benchmarks.")
    parser.add_argument("--only", action="append", choices=[b.NAME for b in BENCHES],
                        help="Run only this bench (repeatable).")
    args = parser.parse_args(argv)
    rows: list[Row] = []
    failed: list[str] = []
    for module in BENCHES:
        if args.only and module.NAME not in args.only:
            continue
        try:
            rows += run_one(module, args)
        except Exception as exc:  # one broken bench must not hide the others' numbers
            failed.append(module.NAME)
            print(f"!! {module.NAME} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    print()
    print(table(rows))
    missed = [f"{r.bench}/{r.metric}" for r in rows if r.met is False]
    if missed:
        print("\ngoals missed: " + ", ".join(missed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
