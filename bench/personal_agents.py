"""``personal_agents``: what a run costs the hub, beside the writes it cannot avoid.

In process (the offline harness: a real hub on SQLite, the real kernel, a scripted model
that answers at once, an in-memory thread), so the numbers are the kernel's own cost:

* *run, 1 model call + 1 tool* — sequential runs of a ``/rewrite``-shaped agent, from
  dispatch to the run recorded; anchor: the same writes done directly through the ticket
  service (run ticket, four audit messages, the closing transition) — the floor a run
  with an audit trail sits on;
* *plain comment* — dispatch of a comment with no trigger word: decided from the
  manifests alone, no database read; anchor: one ticket read on the same hub;
* */fix by a stranger* — a trigger word from someone who owns none of the ``--installs``
  installations of that agent: one indexed read of the installations whose owner's
  identity wrote it (``agent_identities``), which finds none; none runs. (Before the
  identity index it read all 200 installations: 19.8-30.7x a ticket read; after, ~2x.)
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from bench.report import Row, percentile
from bench.runner import main, size
from tickethub.agents import Manifest, Run
from tickethub.agents.events import AgentEvent
from tickethub.agents.testing import AgentHarness
from tickethub.domain.actors import Actor, Role
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import TicketDraft
from tickethub.llm import Completion, ScriptedLLM

NAME = "personal_agents"
WARMUP = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(NAME)
    group.add_argument("--runs", type=int, help="sequential runs [300; quick 40].")
    group.add_argument("--installs", type=int,
                       help="installations for the routing rows [200; quick 50].")


class Fix:
    manifest = Manifest.parse({"name": "fix", "triggers": ["/fix"],
                               "scopes": ["edit_owner_comment"]})

    async def run(self, run: Run) -> None:
        done = await run.complete([{"role": "user", "content": run.event.text}])
        await run.call("edit_owner_comment", "asked", body=done.content or "")


async def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    runs = size(args, "runs", 300, 40)
    installs = size(args, "installs", 200, 50)
    llm = ScriptedLLM(*[Completion("Fixed.")] * (runs + WARMUP))
    async with AgentHarness(Fix(), llm) as hub:
        run_ms = []
        for i in range(runs + WARMUP):
            start = time.perf_counter()
            done = await hub.say(f"/fix tset {i}")
            assert done is not None and done.status == "done", done
            if i >= WARMUP:
                run_ms.append((time.perf_counter() - start) * 1000)
        tickets = hub.hub.tickets
        actor = Actor("bench-agent", Role.AGENT)
        direct_ms = []
        for i in range(runs + WARMUP):
            start = time.perf_counter()
            t, _ = tickets.ask(actor, TicketDraft(kind=Kind.TASK, title=f"run {i}",
                                                  assignee="owner"))
            for line in range(4):
                tickets.post_message(actor, t.id, f"audit line {line}", "agent",
                                     data={"audit": {"n": line}})
            tickets.transition(actor, t.id, Status.DONE, "agent")
            if i >= WARMUP:
                direct_ms.append((time.perf_counter() - start) * 1000)
        for n in range(installs):
            hub.agents.directory.install(f"person-{n}", "fix", {}, {"github": f"p{n}"})
        plain = AgentEvent("issue_comment.created", "nobody", "just a comment", hub.surface)
        stranger = AgentEvent("issue_comment.created", "nobody", "/fix it", hub.surface)
        plain_us, stranger_us, read_us = [], [], []
        for i in range(runs + WARMUP):
            start = time.perf_counter()
            assert await hub.agents.kernel.dispatch(plain) == []
            mid = time.perf_counter()
            assert await hub.agents.kernel.dispatch(stranger) == []
            third = time.perf_counter()
            tickets.get(1)
            end = time.perf_counter()
            if i >= WARMUP:
                plain_us.append((mid - start) * 1e6)
                stranger_us.append((third - mid) * 1e6)
                read_us.append((end - third) * 1e6)
    anchor = "the same writes, direct"
    read = "one ticket read"
    rows = [
        Row(NAME, "run, 1 model call + 1 tool, p50", percentile(run_ms, 50), "ms", None,
            anchor, percentile(direct_ms, 50)),
        Row(NAME, "run, 1 model call + 1 tool, p99", percentile(run_ms, 99), "ms", None,
            anchor, percentile(direct_ms, 99)),
        Row(NAME, f"plain comment, no trigger word ({installs} installs), p50",
            percentile(plain_us, 50), "µs", None, read, percentile(read_us, 50)),
        Row(NAME, f"/fix by a stranger ({installs} installs of fix), p50",
            percentile(stranger_us, 50), "µs", None, read, percentile(read_us, 50)),
    ]
    return rows, {"runs": runs, "installs": installs}


if __name__ == "__main__":
    main(sys.modules[__name__])
