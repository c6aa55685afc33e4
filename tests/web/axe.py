"""axe-core in the browser tests: the accessibility engine, fetched once with npm into a
git-ignored cache (``tests/web/.cache/``), then injected into pages under test."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import pytest

AXE_VERSION = "4.14.1"
CACHE = Path(__file__).with_name(".cache") / f"axe-core-{AXE_VERSION}"
# Rules that fail the test: axe's "serious" and "critical" impacts.
FAILING = ("serious", "critical")


def axe_source() -> str:
    """``axe.min.js``; npm (``npm pack``, which checks the registry's integrity hash)
    fetches it the first time. Skips the test when npm cannot."""
    script = CACHE / "axe.min.js"
    if not script.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("axe-core: npm is not installed")
        with tempfile.TemporaryDirectory() as folder:
            done = subprocess.run([npm, "pack", f"axe-core@{AXE_VERSION}", "--silent"],
                                  cwd=folder, capture_output=True, text=True, timeout=180)
            if done.returncode != 0:
                pytest.skip(f"axe-core: npm pack failed: {done.stderr.strip()[-300:]}")
            with tarfile.open(Path(folder) / f"axe-core-{AXE_VERSION}.tgz") as tar:
                member = tar.extractfile("package/axe.min.js")
                assert member is not None
                CACHE.mkdir(parents=True, exist_ok=True)
                script.write_bytes(member.read())
    return script.read_text()


def serious_violations(page: Any) -> list[dict[str, Any]]:
    """Run axe on the page as it is; the serious and critical violations, each with
    the selectors of the nodes to blame."""
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(content=axe_source())
    result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    return [{"id": v["id"], "impact": v["impact"], "help": v["help"],
             "nodes": [n["target"] for n in v["nodes"]][:5]}
            for v in result["violations"] if v["impact"] in FAILING]
