"""The hub's process-wide metric series (``prometheus-client``), kept in their own
registry so several hubs in one process (tests) do not collide with the library's
global one.

Contracts:

* Labels are bounded: door names, channel names, group-commit names; never a ticket
  id, a user name or anything a caller chose.
* Updating a series is cheap (a lock and an add) and safe from any thread: they are
  updated on hot paths (every wake, every group commit, every GitHub response).
* Series whose value is read from the database at scrape time live in
  :mod:`tickethub.ops.scrape`, not here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

#: Where an agent can be parked waiting for a person (the ``door`` label).
DOORS = ("wait", "sse", "ap_hold", "openai_block", "mcp_call")

PARKED = Gauge("tickethub_parked_agents", "Agents (and clients) parked waiting right "
               "now, by door: native long-poll wait, SSE event stream, Agent Protocol "
               "step hold, OpenAI-compatible blocking request, MCP tool call.",
               ["door"], registry=REGISTRY)
for _door in DOORS:
    PARKED.labels(door=_door)

WAKE_LATENCY = Histogram(
    "tickethub_wake_latency_seconds", "From the commit of a change (an answer) to the "
    "waiters of its ticket being woken in this process, per woken waiter.",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
    registry=REGISTRY)

GROUP_COMMIT_BATCH = Histogram(
    "tickethub_group_commit_batch_size", "Requests written together in one group-committed "
    "transaction, by writer.", ["writer"],
    buckets=(1, 2, 4, 8, 16, 32, 64), registry=REGISTRY)

GROUP_COMMIT_SECONDS = Histogram(
    "tickethub_group_commit_seconds", "Time one group-committed transaction took, by writer.",
    ["writer"], buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
    registry=REGISTRY)

GITHUB_RATE_REMAINING = Gauge(
    "tickethub_github_rate_limit_remaining", "GitHub's x-ratelimit-remaining on the last "
    "response the GitHub channel got (NaN until the first).", registry=REGISTRY)
GITHUB_RATE_REMAINING.set(float("nan"))


@contextmanager
def parked(door: str) -> Iterator[None]:
    """Count the ``with`` block as one agent parked at ``door`` (one of ``DOORS``)."""
    gauge = PARKED.labels(door=door)
    gauge.inc()
    try:
        yield
    finally:
        gauge.dec()


def github_rate_seen(remaining: str | None) -> None:
    """Record an ``x-ratelimit-remaining`` header value (ignored when absent or odd)."""
    if remaining is not None and remaining.isdigit():
        GITHUB_RATE_REMAINING.set(int(remaining))
