"""Python's cyclic garbage collector in a hub that runs for weeks: what its pauses cost,
and keeping them few and short.

Every collection runs on whichever thread allocated last, holding the GIL: while it
runs, the event loop and every request stand still. A full collection (generation 2)
walks every object the collector tracks, and a hub holds many: about 250,000 from
start-up (modules, routes, schemas, table metadata) and some 40 more per parked agent.
With 5,000 agents parked that is ~450,000 objects, and on the 2-core machines the
benches run on one full pass took 0.2-0.5 s; ten of them ran while those agents parked
(``bench/concurrent_waiters``), 2 s in all, every agent and request waiting each time.

* :func:`watch_pauses` times every collection into ``tickethub_gc_pause_seconds``, so
  an operator sees those stalls on ``/metrics`` (and the benches read them there).
* :func:`settle_heap`, once the server is up, moves everything start-up made into the
  collector's permanent generation (``gc.freeze``: it lives as long as the process, so
  scanning it again and again can never free anything) and raises how many allocations
  start a collection (generation 0: 700 to ``YOUNG_THRESHOLD``). At 700 a young
  collection ran every few requests and walked the objects of every request then in
  flight (and of every agent parking meanwhile), aging them into the older generations
  to be walked again there. The older generations run after 20 collections of the one
  below (CPython: 10), and a full pass still only once what aged into the oldest
  generation since the last one grew by a quarter of it.

Measured with ``bench/concurrent_waiters --against`` (the code before, same run, turns
taken in turn, 8 of them; docs/benchmarks.md): asking 5,000 agents' tickets and parking
them took the server 8.4-10.0 s of CPU instead of 10.4-11.9 s; the collector stopped it
for 0.12-0.26 s in about 60 pauses, none longer than 0.1 s, where before ten full passes
alone took ~2 s, the longest 0.35-0.5 s. The price: ~15 MB more resident memory with the
agents parked (garbage with cycles lives a little longer). Freezing adds no measurable
speed there (the full passes it shortens now hardly run during such a burst); it is kept
for the passes that do run over weeks, each of which it spares the start-up objects.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from tickethub.ops.series import GC_PAUSES

#: Allocations (net, of objects the collector tracks) that start a young collection.
YOUNG_THRESHOLD = 10_000
#: Collections of the generation below that start a middle one, and a full one:
#: a middle collection every 200,000 allocations, a full one at most every 4 million.
OLDER_THRESHOLDS = (20, 20)

_started: list[float] = [0.0]


def _timed(phase: str, info: dict[str, Any]) -> None:
    # Collections never overlap (the interpreter runs one at a time, callbacks
    # included), so one start time and the lock-free histogram are enough.
    if phase == "start":
        _started[0] = time.perf_counter()
    else:
        GC_PAUSES.observe(time.perf_counter() - _started[0])


def watch_pauses() -> None:
    """Time every collection from now on into ``GC_PAUSES`` (once per process; a second
    call changes nothing)."""
    if _timed not in gc.callbacks:
        gc.callbacks.append(_timed)


def settle_heap() -> None:
    """Collect once, freeze what is left (the process's start-up objects) out of every
    later collection, and set the thresholds above. Call once the server has started,
    before it takes load; objects made later are collected as usual."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *OLDER_THRESHOLDS)
