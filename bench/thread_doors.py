"""Doors in worker threads on the one write path: ``--td-threads`` threads (as web forms,
GitHub and email answers, mail and the conversation engine run) post messages through
``TicketService``'s plain commands on a running hub, group-committed with the event
loop's writes, against the same writes each in a transaction of its own (the anchor:
how every thread door wrote before issue 15), in one run, taking turns.

In the hub's process (SQLite, WAL; no HTTP: what is measured is the write path). CPU is
the process's user+system time over the timed writes. Transactions are counted at the
store (``store.write()`` and, for batches the event loop commits, ``store.write_now()``).
Goal: thread doors write at least as fast grouped as alone.

Where it stands (2 cores, load ~1, 2026-11-27; 32 threads x 40 messages x 2 turns):
grouped 5,321 writes/s against 1,210 alone (4.4x), 0.19 against 0.86 ms of CPU per
write, 18.7 writes per transaction (137 transactions for 2,560 writes).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from bench.report import Goal, Row
from bench.runner import main, size
from tickethub.domain.actors import Actor, Role
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings

NAME = "thread_doors"
ALICE = Actor("alice", Role.RESPONDER)
AGENT = Actor("bench-agent", Role.AGENT)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(NAME)
    group.add_argument("--td-threads", type=int, help="writing threads [32].")
    group.add_argument("--td-writes", type=int,
                       help="messages each thread posts per turn [40; quick 10].")
    group.add_argument("--td-rounds", type=int, help="turns each way takes [2; quick 1].")


class _Counted:
    """Counts the store's write transactions: ``write()`` (a thread's, or a batch's in a
    drain thread) and ``write_now()`` (a batch's on the event loop, SQLite), each once
    its transaction has begun (a ``write_now`` that would block begins nothing)."""

    def __init__(self, hub: HubRuntime) -> None:
        self.count = 0
        store = hub.store
        for name in ("write", "write_now"):
            setattr(store, name, self._counting(getattr(store, name)))

    def _counting(self, begin: Callable[[], AbstractContextManager[Any]]
                  ) -> Callable[[], AbstractContextManager[Any]]:
        @contextmanager
        def counted() -> Iterator[Any]:
            with begin() as unit:
                self.count += 1
                yield unit
        return counted


async def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    threads = size(args, "td_threads", 32, 32)
    each = size(args, "td_writes", 40, 10)
    rounds = size(args, "td_rounds", 2, 1)
    hub = HubRuntime(Settings(data_dir=Path(tempfile.mkdtemp(prefix="td-"))), components=[])
    ids = [hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title=f"t{i}"))[0].id
           for i in range(threads)]
    counted = _Counted(hub)
    totals = {way: {"wall": 0.0, "cpu": 0.0, "writes": 0, "commits": 0}
              for way in ("grouped", "alone")}
    pool = ThreadPoolExecutor(threads, thread_name_prefix="door")

    def post(i: int) -> None:
        for n in range(each):
            hub.tickets.post_message(ALICE, ids[i], f"message {n}", "web")

    try:
        async with hub.running():
            loop = asyncio.get_running_loop()
            for _ in range(rounds):
                for way in ("alone", "grouped"):
                    hub.tickets.bind(loop if way == "grouped" else None)
                    commits, wall, cpu = counted.count, time.perf_counter(), time.process_time()
                    await asyncio.gather(*(loop.run_in_executor(pool, post, i)
                                           for i in range(threads)))
                    t = totals[way]
                    t["wall"] += time.perf_counter() - wall
                    t["cpu"] += time.process_time() - cpu
                    t["writes"] += threads * each
                    t["commits"] += counted.count - commits
            hub.tickets.bind(loop)
    finally:
        pool.shutdown()
        hub.close()
    g, a = totals["grouped"], totals["alone"]
    rate = {w: t["writes"] / t["wall"] for w, t in totals.items()}
    cpu_ms = {w: 1000 * t["cpu"] / t["writes"] for w, t in totals.items()}
    per_commit = {w: t["writes"] / max(1, t["commits"]) for w, t in totals.items()}
    note = f"{threads} threads x {each} messages x {rounds} turns each way"
    rows = [
        Row(NAME, "thread doors: writes/s, group-committed", rate["grouped"], "writes/s",
            Goal(">=", rate["alone"]), "one transaction each, writes/s", rate["alone"],
            note),
        Row(NAME, "thread doors: CPU per write, group-committed", cpu_ms["grouped"], "ms",
            None, "one transaction each, CPU ms/write", cpu_ms["alone"]),
        Row(NAME, "thread doors: writes per transaction", per_commit["grouped"], "writes",
            None, "one transaction each", per_commit["alone"],
            f"{g['commits']} transactions for {g['writes']} writes "
            f"(alone: {a['commits']} for {a['writes']})"),
    ]
    return rows, {"totals": totals}


if __name__ == "__main__":
    import sys

    main(sys.modules[__name__])
