"""``tickethub github ...`` against a fake GitHub served on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from gh_fake import FakeGitHub
from gh_server import FakeGitHubServer

from tickethub.cli.main import cli


@pytest.fixture
def served() -> Iterator[FakeGitHubServer]:
    with FakeGitHubServer(FakeGitHub()) as server:
        yield server


def run(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["github", *args], env=env)
    return result.exit_code, result.stdout, result.stderr


def env_for(tmp_path: Path, server: FakeGitHubServer | None) -> dict[str, str]:
    env = {"TICKETHUB_DATA_DIR": str(tmp_path / "data"), "TICKETHUB_DATABASE_URL": "",
           "TICKETHUB_GITHUB_WRITE_INTERVAL_SECONDS": "0"}
    env["TICKETHUB_DATABASE_URL"] = f"sqlite:///{tmp_path / 'hub.db'}"
    if server is not None:
        env["TICKETHUB_GITHUB_TOKEN"] = "ghp_cli_test"
        env["TICKETHUB_GITHUB_API_URL"] = server.url
    return env


def test_connect_check_import_and_status(tmp_path: Path, served: FakeGitHubServer) -> None:
    env = env_for(tmp_path, served)
    served.fake.add_issue("octo-org/app", "Port the parser", "", ["agent-task"], "octocat")
    code, out, _ = run(env, "connect", "Octo-Org/App", "--label", "github", "--kind",
                       "approval")
    assert code == 0 and "connected octo-org/app: label github and kind approval" in out

    code, out, _ = run(env, "check")
    assert code == 0, out
    assert "token user: tickethub-bot" in out and "scopes: repo" in out
    assert "octo-org/app: can open and comment on issues" in out
    auth = next(r for r in served.fake.requests if r.url.path == "/user")
    assert auth.headers["authorization"] == "token ghp_cli_test"

    code, out, _ = run(env, "import", "octo-org/app", "--label", "agent-task", "--json")
    assert code == 0, out
    assert json.loads(out) == {"created": 1, "existing": 0, "comments": 0}

    code, out, _ = run(env, "status", "--json")
    state = json.loads(out)
    assert state["connections"][0]["repo"] == "octo-org/app"
    assert state["connections"][0]["import_label"] == "agent-task"
    assert state["connections"][0]["issues"] == {"open": 1}
    code, out, _ = run(env, "status")
    assert "octo-org/app: label github and kind approval; issues: 1 open" in out


def test_bad_input_and_missing_token(tmp_path: Path) -> None:
    env = env_for(tmp_path, None)
    code, _, err = run(env, "connect", "not a repo")
    assert code == 6 and "field repo" in err
    code, _, err = run(env, "connect", "octo/app", "--kind", "nonsense")
    assert code == 2
    code, _, err = run(env, "check")
    assert code == 6 and "TICKETHUB_GITHUB_TOKEN" in err
    code, _, err = run(env, "disconnect", "octo/app")
    assert code == 3 and "not connected" in err
    code, out, _ = run(env, "status")
    assert code == 0 and "no repository connected" in out
