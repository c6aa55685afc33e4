"""The garbage collector in a served hub (``ops/collector.py``): every pause timed on
``/metrics``; start-up's objects frozen out of later scans, young collections rarer."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import LIVE_TIMEOUT
from tickethub.ops import collector
from tickethub.ops.series import GC_PAUSES
from tickethub.sdk.testing import free_port, hub_command


def _pauses() -> tuple[float, float]:
    [family] = GC_PAUSES.collect()
    samples = {s.name: s.value for s in family.samples if not s.labels.get("le")}
    return samples["tickethub_gc_pause_seconds_count"], samples["tickethub_gc_pause_seconds_sum"]


def test_every_collection_is_timed_once_watched_and_watching_twice_times_it_once() -> None:
    before_count, before_sum = _pauses()
    try:
        collector.watch_pauses()
        collector.watch_pauses()
        assert gc.callbacks.count(collector._timed) == 1
        gc.collect()
        count, total = _pauses()
        assert count == before_count + 1
        assert total > before_sum
    finally:
        gc.callbacks.remove(collector._timed)
    gc.collect()  # no longer watched: not counted
    assert _pauses()[0] == before_count + 1


_SETTLE = """
import gc, json
from tickethub.ops import collector
class Made: pass
early = Made()
collector.settle_heap()
late = Made()
tracked = {id(o) for o in gc.get_objects()}
print(json.dumps({"frozen": gc.get_freeze_count(), "threshold": gc.get_threshold(),
                  "early_scanned": id(early) in tracked, "late_scanned": id(late) in tracked}))
"""


def test_settling_freezes_what_exists_and_collects_what_comes_later() -> None:
    # In a process of its own: freezing this test process would keep its garbage.
    out = subprocess.run([sys.executable, "-c", _SETTLE], capture_output=True, text=True,
                         check=True, timeout=LIVE_TIMEOUT).stdout
    found = json.loads(out)
    assert found["frozen"] > 1000  # modules, classes, functions made before
    assert found["threshold"] == [collector.YOUNG_THRESHOLD, *collector.OLDER_THRESHOLDS]
    assert found["early_scanned"] is False
    assert found["late_scanned"] is True


def test_a_served_hub_settles_its_heap_and_shows_the_pauses(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKETHUB_")}
    env |= {"TICKETHUB_METRICS": "true", "TICKETHUB_ADMIN_TOKEN": "th_admin_" + "g" * 40}
    process = subprocess.Popen(
        [*hub_command(), "serve", "--port", str(port), "--data-dir", str(tmp_path / "hub")],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "the hub did not start"
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert response.status_code == 200, response.text
        series = {s.name: s.value for family in text_string_to_metric_families(response.text)
                  for s in family.samples}
        # At least the collection that settled the heap, right after start-up.
        assert series["tickethub_gc_pause_seconds_count"] >= 1
        assert series["tickethub_gc_pause_seconds_sum"] > 0
    finally:
        process.terminate()
        process.communicate(timeout=30)
