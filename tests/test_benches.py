"""``make bench`` keeps working: every bench runs at its quick size (``python -m bench
--quick``, each on its own fresh server, as a user runs them) and writes finite numbers.

The numbers themselves are not judged here (a timed assertion on a shared 2-core machine
only measures the machine); a bench that crashes, or reports a value that is not a
number, fails. One run for the module (about four minutes), then one test per bench."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bench.__main__ import bench_names
from bench.report import RESULTS_ENV

from tests.conftest import PG_URL, require_server

ROOT = Path(__file__).resolve().parent.parent
NEEDS_POSTGRESQL = {"multi_process"}
_RUN_TIMEOUT = 20 * 60


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The folder of the JSON files ``python -m bench --quick`` wrote, and its output."""
    results = tmp_path_factory.mktemp("bench-results")
    skipped = [] if PG_URL else [arg for name in sorted(NEEDS_POSTGRESQL)
                                 for arg in ("--skip", name)]
    env = {**os.environ, RESULTS_ENV: str(results),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), str(ROOT),
                                                       os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "bench", "--quick", *skipped], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=_RUN_TIMEOUT)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    return results, output


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


@pytest.mark.parametrize("name", bench_names())
def test_the_bench_runs_at_its_quick_size_and_reports_numbers(
        name: str, quick_run: tuple[Path, str]) -> None:
    if name in NEEDS_POSTGRESQL:
        require_server("PostgreSQL", PG_URL is not None)
    results, output = quick_run
    path = results / f"{name}.json"
    assert path.exists(), f"{name} wrote no results:\n{output[-4000:]}"
    written = json.loads(path.read_text())
    assert written["params"]["quick"] is True
    rows = written["rows"]
    assert rows, f"{name} measured nothing"
    for row in rows:
        assert row["bench"] == name
        assert _finite(row["value"]), row
        assert row["anchor_value"] is None or _finite(row["anchor_value"]), row
        assert row["met"] in (True, False, None)


def test_the_thread_doors_bench_counts_the_grouped_transactions(
        quick_run: tuple[Path, str]) -> None:
    """Its batches commit on the event loop (``write_now``) as well as in threads
    (``write``): both are transactions, and a count that missed one reported every write
    of a turn as one transaction."""
    totals = json.loads((quick_run[0] / "thread_doors.json").read_text())["params"]["totals"]
    grouped, alone = totals["grouped"], totals["alone"]
    assert 1 <= grouped["commits"] <= grouped["writes"]
    assert alone["commits"] >= alone["writes"]  # one transaction each (and the tickets')
