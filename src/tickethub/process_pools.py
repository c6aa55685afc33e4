"""Process pools for CPU work kept off the hub's GIL (costly schema checks in the hub,
bulk mail parsing in ``mail ingest``).

Contract of :func:`spawn_pool`: its workers are spawned (not forked: a fork of a process
with threads may copy a lock some thread held) and end when the process that started
the pool ends, however it ends. A pool shut down by its owner stops its workers itself;
but when the owner dies without that (``kill -9``, the OOM killer, a crash, a supervisor
that gave up waiting), a ``concurrent.futures`` worker would wait for its next task
forever: it holds both ends of its own task pipe, so it never reads end-of-file, and it
keeps the pool's resource tracker alive with it. Each worker therefore watches its
parent's sentinel (readable once the parent is gone) from a daemon thread and exits
then.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.connection import wait


def spawn_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` spawned processes that end with this one (module doc)."""
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_end_with_parent)


def _end_with_parent() -> None:
    """In a worker, before its first task: exit once the parent process is gone."""
    parent = multiprocessing.parent_process()
    if parent is None:  # not started by multiprocessing: nothing to watch
        return
    threading.Thread(target=_exit_when_ready, args=(parent.sentinel,), daemon=True,
                     name="end-with-parent").start()


def _exit_when_ready(sentinel: int) -> None:
    wait([sentinel])
    # Straight out: the parent is gone, so no result can reach it and nothing is left
    # to clean up that the kernel does not (no atexit handlers, no joining threads).
    os._exit(0)
