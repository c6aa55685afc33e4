"""Worker processes of the hub's process pools (costly schema checks, bulk mail parsing)
end when the process that started them dies, even by ``kill -9``, the OOM killer or a
crash: nothing shuts their pool down then, and a ``concurrent.futures`` worker waits
for its next task forever (it holds both ends of its own task pipe, so it never sees
its parent go)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A stand-in for a hub: starts a pool, has its workers run a task, prints their pids,
# then waits to be killed.
_OWNER = textwrap.dedent("""
    import os, time
    from tickethub.process_pools import spawn_pool
    pool = spawn_pool(2)
    pids = {f.result() for f in [pool.submit(os.getpid) for _ in range(16)]}
    print(" ".join(str(pid) for pid in sorted(pids)), flush=True)
    time.sleep(600)
""")


def _state_and_parent(stat: Path) -> tuple[str, int] | None:
    """A process's state letter and parent pid from its ``/proc/<pid>/stat`` (the
    fields after the command name, which may itself hold ``)``); None once it is gone."""
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[1])


def _alive(pid: int) -> bool:
    # a zombie is gone for our purpose (nobody reaped it yet: its parent died too)
    found = _state_and_parent(Path(f"/proc/{pid}/stat"))
    return found is not None and found[0] != "Z"


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (its pool's workers and their resource
    tracker), from ``/proc``."""
    return [int(stat.parent.name) for stat in Path("/proc").glob("[0-9]*/stat")
            if (found := _state_and_parent(stat)) is not None and found[1] == pid]


def _pool_owner() -> tuple[subprocess.Popen[str], list[int]]:
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert owner.stdout is not None
    line = owner.stdout.readline()
    assert line.strip(), "the pool owner printed no worker pids"
    ran = {int(p) for p in line.split()}
    children = _children(owner.pid)
    assert ran <= set(children), (ran, children)
    return owner, children


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the workers in /proc")
def test_pool_workers_end_when_their_owner_is_killed() -> None:
    owner, workers = _pool_owner()
    try:
        assert len(workers) >= 2 and all(_alive(pid) for pid in workers)  # + the tracker
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
        deadline = time.monotonic() + 30  # liveness, not speed: they go within moments
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in workers if _alive(pid)], "workers outlived their owner"
    finally:
        owner.kill()
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
