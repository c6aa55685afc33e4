"""Running benches: flags, the event loop, the table and the JSON file.

A bench module has ``NAME``, ``add_arguments(parser)`` (its size flags, defaulting to
``None`` = full size, or the quick size with ``--quick``) and
``async run(args) -> (rows, params)``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Awaitable, Callable, Sequence
from types import ModuleType
from typing import Any, cast

from bench.report import Row, table, write_json

QUICK_ENV = "TICKETHUB_BENCH_QUICK"


def parser_for(modules: Sequence[ModuleType], description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true",
                        default=os.environ.get(QUICK_ENV, "") not in ("", "0"),
                        help=f"CI-sized smoke run (also {QUICK_ENV}=1).")
    for module in modules:
        module.add_arguments(parser)
    return parser


def size(args: argparse.Namespace, name: str, full: Any, quick: Any) -> Any:
    """The value of flag ``name``, else the full or quick default."""
    value = getattr(args, name)
    if value is not None:
        return value
    return quick if args.quick else full


def run_loop(coro_fn: Callable[[], Awaitable[Any]]) -> Any:
    """Run on uvloop when it is installed (it is, with uvicorn[standard]): the client
    should cost as little CPU as the server it measures allows."""
    try:
        import uvloop

        factory: Callable[[], asyncio.AbstractEventLoop] | None = uvloop.new_event_loop
    except ImportError:
        factory = None
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(cast(Any, coro_fn()))


def run_one(module: ModuleType, args: argparse.Namespace) -> list[Row]:
    """Run ``module`` with ``args``, write its JSON, and return its rows."""
    print(f"== {module.NAME} ...", flush=True)
    rows, params = run_loop(lambda: module.run(args))
    path = write_json(module.NAME, rows, {**params, "quick": args.quick})
    print(f"   wrote {path}", flush=True)
    return cast(list[Row], rows)


def main(module: ModuleType, argv: Sequence[str] | None = None) -> None:
    """``python -m bench.<name>``: run one bench and print its table."""
    args = parser_for([module], (module.__doc__ or "").strip().splitlines()[0]).parse_args(argv)
    rows = run_one(module, args)
    print()
    print(table(rows))
