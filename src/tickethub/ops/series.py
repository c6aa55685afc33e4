"""The hub's process-wide metric series (``prometheus-client``), kept in their own
registry so several hubs in one process (tests) do not collide with the library's
global one.

Contracts:

* Labels are bounded: door names, channel names, group-commit names; never a ticket
  id, a user name or anything a caller chose.
* Updating a series is cheap (a lock and an add) and safe from any thread: they are
  updated on hot paths (every group commit, every GitHub response).
* The two updated once per parked agent (``PARKED``, ``WAKE_LATENCY``) are cheaper
  still: plain counters with no lock (:class:`LoopGauge`, :class:`LoopHistogram`),
  because only the event loop's thread updates them. A shared deadline wakes thousands
  of waiters at once, and prometheus-client's lock per update was a tenth of that
  round's CPU. ``GC_PAUSES`` is one too: the interpreter runs one garbage
  collection at a time, on whichever thread, so its updates never overlap either. A
  scrape (any thread) reads them as they are at that moment.
* Series whose value is read from the database at scrape time live in
  :mod:`tickethub.ops.scrape`, not here.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

REGISTRY = CollectorRegistry(auto_describe=True)


class LoopGauge(Collector):
    """A gauge with one label, updated by one thread only (the event loop's): ``inc``
    and ``dec`` are a dict add, no lock. Collected at scrape time like any series."""

    def __init__(self, name: str, documentation: str, label: str, values: Sequence[str],
                 registry: CollectorRegistry) -> None:
        self._name, self._doc, self._label = name, documentation, label
        self.counts = dict.fromkeys(values, 0)
        registry.register(self)

    def inc(self, value: str) -> None:
        self.counts[value] += 1

    def dec(self, value: str) -> None:
        self.counts[value] -= 1

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(self._name, self._doc, labels=[self._label])
        for value, count in list(self.counts.items()):
            family.add_metric([value], count)
        yield family


class LoopHistogram(Collector):
    """A histogram updated by one writer at a time (the event loop's thread; the
    collector's callbacks): ``observe`` is a bisection and two adds, no lock. Buckets
    as prometheus-client's (upper bounds, inclusive; ``+Inf`` added)."""

    def __init__(self, name: str, documentation: str, buckets: Sequence[float],
                 registry: CollectorRegistry) -> None:
        self._name, self._doc = name, documentation
        self._bounds = sorted(buckets)
        self._counts = [0] * (len(self._bounds) + 1)  # the last: above every bound
        self._sum = 0.0
        registry.register(self)

    def observe(self, value: float) -> None:
        self._counts[bisect_left(self._bounds, value)] += 1
        self._sum += value

    def collect(self) -> Iterator[Metric]:
        counts, total = list(self._counts), self._sum
        cumulative, buckets = 0, []
        for bound, count in zip([*self._bounds, float("inf")], counts, strict=True):
            cumulative += count
            buckets.append(("+Inf" if bound == float("inf") else repr(float(bound)),
                            cumulative))
        family = HistogramMetricFamily(self._name, self._doc)
        family.add_metric([], buckets, sum_value=total)
        yield family

#: Where an agent can be parked waiting for a person (the ``door`` label).
DOORS = ("wait", "sse", "ap_hold", "openai_block", "mcp_call")

PARKED = LoopGauge(
    "tickethub_parked_agents", "Agents (and clients) parked waiting right now, by door: "
    "native long-poll wait, SSE event stream, Agent Protocol step hold, OpenAI-compatible "
    "blocking request, MCP tool call.", "door", DOORS, REGISTRY)

WAKE_LATENCY = LoopHistogram(
    "tickethub_wake_latency_seconds", "From the commit of a change (an answer) to the "
    "waiters of its ticket being woken in this process, per woken waiter.",
    (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5), REGISTRY)

GC_PAUSES = LoopHistogram(
    "tickethub_gc_pause_seconds", "How long each run of Python's cyclic garbage collector "
    "stopped this process (every thread, the event loop's too), any generation.",
    (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0), REGISTRY)

GROUP_COMMIT_BATCH = Histogram(
    "tickethub_group_commit_batch_size", "Requests written together in one group-committed "
    "transaction, by writer.", ["writer"],
    buckets=(1, 2, 4, 8, 16, 32, 64), registry=REGISTRY)

GROUP_COMMIT_SECONDS = Histogram(
    "tickethub_group_commit_seconds", "Time one group-committed transaction took, by writer.",
    ["writer"], buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
    registry=REGISTRY)

MISSED_NOTIFICATIONS = Counter(
    "tickethub_missed_notifications_total", "Tickets whose change reached this process "
    "without a notification (found by the bus's sweep of the log; their waiters were "
    "woken then): another process stopped between commit and NOTIFY, or could not send.",
    registry=REGISTRY)

GITHUB_RATE_REMAINING = Gauge(
    "tickethub_github_rate_limit_remaining", "GitHub's x-ratelimit-remaining on the last "
    "response the GitHub channel got (NaN until the first).", registry=REGISTRY)
GITHUB_RATE_REMAINING.set(float("nan"))


@contextmanager
def parked(door: str) -> Iterator[None]:
    """Count the ``with`` block as one agent parked at ``door`` (one of ``DOORS``); on
    the event loop's thread only (``LoopGauge``)."""
    PARKED.inc(door)
    try:
        yield
    finally:
        PARKED.dec(door)


def github_rate_seen(remaining: str | None) -> None:
    """Record an ``x-ratelimit-remaining`` header value (ignored when absent or odd)."""
    if remaining is not None and remaining.isdigit():
        GITHUB_RATE_REMAINING.set(int(remaining))
