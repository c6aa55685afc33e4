"""Worker processes for the costly checks of callers' JSON Schemas.

A check that outgrows ``answer_schema.INLINE_STEPS`` (or a big schema) is pure Python
CPU work; in the hub's process it would hold the GIL and slow every other request, the
event loop included. Here it runs in a small pool of spawned processes instead, while
the calling worker thread waits without the GIL. Checks queue for a free worker, so a
flood of costly schemas slows only the requests that carry them.
"""

from __future__ import annotations

import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from tickethub.process_pools import spawn_pool
from tickethub.services.answer_schema import Failure, SchemaChecker, SchemaLimits, check_elsewhere


class SchemaWorkers:
    """An ``answer_schema.Offload`` backed by ``workers`` processes, started on first use."""

    def __init__(self, workers: int) -> None:
        self._workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def __call__(self, limits: SchemaLimits, schema: dict[str, Any], instance: Any,
                 field: str, is_value: bool) -> Failure | None:
        try:
            future = self._executor().submit(check_elsewhere, limits, schema, instance,
                                             field, is_value)
            return future.result()
        except BrokenProcessPool:  # a worker died (killed, out of memory): start afresh
            self._reset()
            return check_elsewhere(limits, schema, instance, field, is_value)

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = spawn_pool(self._workers)
            return self._pool

    def _reset(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Stop the worker processes (checks still queued are cancelled)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def schema_checker(limits: SchemaLimits, workers: int) -> tuple[SchemaChecker,
                                                                SchemaWorkers | None]:
    """The hub's checker: with ``workers`` processes for costly checks (0: none, every
    check runs in the caller's thread)."""
    offload = SchemaWorkers(workers) if workers > 0 else None
    return SchemaChecker(limits, offload), offload
