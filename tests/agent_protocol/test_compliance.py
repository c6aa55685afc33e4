"""The official Agent Protocol compliance collection (``../shared/specs``), run with
newman by ``run-compliance.sh`` against a hub this test starts as a subprocess.

Nobody answers the steps here, so the hub holds each step for one second and returns it
``running``, as a spec client would see while a person has not replied yet."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from bench.hub import HubProcess

from tests.conftest import require_server

SPECS = Path(__file__).resolve().parents[2].parent / "shared" / "specs"
SCRIPT = SPECS / "run-compliance.sh"
ASSERTIONS = 27  # what the collection holds (specs/README.md)


@pytest.mark.slow
def test_every_assertion_of_the_official_collection_passes(tmp_path: Path) -> None:
    require_server("../shared/specs/run-compliance.sh", SCRIPT.is_file())
    require_server("Node.js", shutil.which("node") is not None)
    env = {"TICKETHUB_AP_STEP_HOLD_SECONDS": "1", "TICKETHUB_AP_ANONYMOUS": "on"}
    with HubProcess(env=env) as hub:
        run = subprocess.run(
            ["bash", str(SCRIPT), hub.url], capture_output=True, text=True, timeout=600,
            env={**os.environ, "TMPDIR": str(tmp_path)},
        )
        log = hub.log_tail()
    lines = run.stdout.strip().splitlines()
    report = "\n".join(lines[-40:]) + "\n" + run.stderr[-2000:] + "\nhub log:\n" + log
    assert run.returncode == 0, report
    assert lines[-1] == f"{ASSERTIONS} passed, 0 failed", report
    assert not [line for line in lines if line.startswith(("FAIL", "ERROR", "SCRIPT"))]
