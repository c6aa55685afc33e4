"""``tickethub agent new``: the generated project declares its entry point and passes
its own tests."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from tickethub.cli.main import cli


def test_new_project_passes_its_own_tests(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["agent", "new", "standup-notes", "--dir",
                                      str(tmp_path)])
    assert result.exit_code == 0, result.output
    root = tmp_path / "standup-notes"
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["tickethub.agents"] == {
        "standup-notes": "standup_notes:agent"}
    workflow = (root / ".github" / "workflows" / "tickethub-agent.yml").read_text()
    assert "${{ inputs.context_url }}" in workflow and "{{" not in workflow.replace("${{", "")
    assert "permissions:\n  contents: read" in workflow
    assert "--agent standup_notes:agent" in workflow
    assert "write" not in workflow.split("permissions:")[1].split("\n\n")[0]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                          cwd=root, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


@pytest.mark.parametrize("name", ["Bad", "x", "9lives"])
def test_a_bad_name_is_refused(tmp_path: Path, name: str) -> None:
    result = CliRunner().invoke(cli, ["agent", "new", name, "--dir", str(tmp_path)])
    assert result.exit_code == 6
    assert "field name" in result.output
    assert list(tmp_path.iterdir()) == []


def test_an_existing_folder_is_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    result = CliRunner().invoke(cli, ["agent", "new", "mine", "--dir", str(tmp_path)])
    assert result.exit_code == 5
