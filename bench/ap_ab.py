"""Same-run A/B of the Agent Protocol door: a hub on an older ``src`` against this one,
with the reference server alongside, taking turns (``bench.ap_throughput``'s phases).

    git archive <commit> src | tar -x -C /tmp/old
    python -m bench.ap_ab /tmp/old/src --seconds 5 --rounds 3

Each phase (task create; step with the in-hub worker) runs ``--rounds`` rounds, each
round one turn of ``--seconds`` per server in the order old, new, reference, so that
drift in the machine's speed falls on all three alike. Prints req/s, server CPU per
request, the ratio to the reference and p99 for each, and ``/proc/loadavg`` before and
after: a speed claim on a shared machine needs both.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path

from bench import ap_throughput as ap
from bench.hub import HubProcess

ROOT = Path(__file__).resolve().parents[1]


def _load() -> str:
    return Path("/proc/loadavg").read_text().strip()


async def run(old_src: str, seconds: float, rounds: int, phases: list[str],
              concurrency: int) -> None:
    env = {"TICKETHUB_AP_ANONYMOUS": "on", **ap._in_hub_worker_env()}
    # The old hub imports tickethub from ``old_src`` (ahead of the installed one).
    old_env = {**env, "PYTHONPATH": os.pathsep.join([old_src, str(ROOT)])}
    print("load before:", _load(), flush=True)
    with ap.ReferenceProcess() as ref, HubProcess(env=old_env) as old, \
            HubProcess(env=env) as new:
        servers = [ap.Server(old.url, old.host, old.port, [old.pid]),
                   ap.Server(new.url, new.host, new.port, [new.pid]),
                   ap.Server(ref.url, ref.host, ref.port, ref.pids)]
        for phase in phases:
            if phase == "create":
                results = await ap._turns(
                    servers, lambda s: s.creates(concurrency, seconds), rounds)
            else:
                results = await ap._turns(
                    servers, lambda s: s.steps(concurrency, seconds), rounds)
            reference = results[2].rps
            for name, p in zip(("old", "new", "ref"), results, strict=True):
                print(f"{phase:6} {name}: {p.rps:7.0f} req/s  {p.cpu_ms:.3f} ms CPU/req  "
                      f"{p.rps / reference:.2f}x ref  p99 {p.p99:.1f} ms", flush=True)
    print("load after:", _load(), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old_src", help="a src folder of the older code (git archive)")
    parser.add_argument("--seconds", type=float, default=2.0, help="one turn [2]")
    parser.add_argument("--rounds", type=int, default=3, help="turns per server [3]")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--phases", default="create,step", help="create,step")
    args = parser.parse_args()
    asyncio.run(run(args.old_src, args.seconds, args.rounds, args.phases.split(","),
                    args.concurrency))


if __name__ == "__main__":
    main()
