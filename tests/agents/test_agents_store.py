"""Installations, runs and sealed secrets on SQLite and PostgreSQL, through the
directory and the ``tickethub agent`` commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from tickethub.cli.main import cli
from tickethub.domain.agent_runs import BudgetUse, RunStatus
from tickethub.errors import Conflict, NotFound, ValidationFailed
from tickethub.server.runtime import HubRuntime


def test_directory_installs_runs_and_secrets(runtime: HubRuntime) -> None:
    directory = runtime.agents.directory
    alice = directory.install("alice", "comment-rewrite", {"style": "polish"},
                              {"github": "alice-gh"})
    assert (alice.enabled, alice.config, alice.identities) == (
        True, {"style": "polish"}, {"github": "alice-gh"})
    with pytest.raises(Conflict):
        directory.install("alice", "comment-rewrite")
    with pytest.raises(ValidationFailed) as bad:
        directory.install("bob", "comment-rewrite", {"style": "loud"})
    assert bad.value.field == "config.style"
    with pytest.raises(NotFound):
        directory.install("bob", "no-such-agent")
    assert not directory.set_enabled("alice", "comment-rewrite", False).enabled
    assert directory.installations("alice")[0].enabled is False

    store = runtime.agents.kernel._store
    run = store.start_run(alice.id, "github:issue_comment.created", runtime.clock.now())
    assert run.status is RunStatus.RUNNING
    done = store.finish_run(run.id, RunStatus.STOPPED, BudgetUse(2, 300, 1, 1.5, 0.0),
                            "budget spent: tokens", runtime.clock.now())
    assert (done.status, done.used.tokens, done.error) == (
        RunStatus.STOPPED, 300, "budget spent: tokens")
    assert directory.runs("alice", "comment-rewrite") == [done]

    key = Path(runtime.settings.data_dir) / "agent-secrets.key"
    assert not key.exists()  # made on the first seal, not at start
    directory.set_secret("alice", "github-token", "ghp_alices_own_token_123")
    assert directory.secret("alice", "github-token") == "ghp_alices_own_token_123"
    with runtime.engine.connect() as c:
        sealed = c.execute(text("SELECT sealed FROM agent_secrets")).scalar_one()
    assert b"ghp_alices" not in bytes(sealed)
    # a sealed value is bound to its owner: moved to bob, it does not open
    runtime.agents.kernel._store.put_secret("bob", "github-token", bytes(sealed),
                                            runtime.clock.now())
    with pytest.raises(ValidationFailed):
        directory.secret("bob", "github-token")
    assert key.stat().st_mode & 0o777 == 0o600


def test_routing_reads_only_installations_the_event_can_trigger(runtime: HubRuntime
                                                                 ) -> None:
    """Commands and mentions: only the installations whose owner's identity on the
    event's channel wrote it or is named; event triggers: all; disabled ones never."""
    directory = runtime.agents.directory
    store = runtime.agents.kernel._store
    for n in range(5):
        directory.install(f"p{n}", "comment-rewrite", {}, {"github": f"gh{n}",
                                                            "chat": f"@p{n}:hs"})
        directory.install(f"p{n}", "thread-summary", {}, {"github": f"gh{n}"})
    directory.set_enabled("p3", "comment-rewrite", False)

    def owners(every: list[str], named: list[str], source: str, names: list[str],
               owner: str | None = None) -> list[tuple[str, str]]:
        return sorted((i.owner, i.agent) for i in store.routing_installations(
            owner, every, named, source, names))

    assert owners([], ["comment-rewrite"], "github", ["stranger"]) == []
    assert owners([], ["comment-rewrite"], "github", ["gh1"]) == [("p1", "comment-rewrite")]
    assert owners([], ["comment-rewrite"], "chat", ["gh1"]) == []  # another channel's name
    assert owners([], ["comment-rewrite"], "chat", ["@p2:hs", "gh0"]) == [
        ("p2", "comment-rewrite")]
    assert owners([], ["comment-rewrite"], "github", ["gh3"]) == []  # disabled
    assert owners(["thread-summary"], ["comment-rewrite"], "github", ["gh4"]) == [
        ("p0", "thread-summary"), ("p1", "thread-summary"), ("p2", "thread-summary"),
        ("p3", "thread-summary"), ("p4", "comment-rewrite"), ("p4", "thread-summary")]
    assert owners(["thread-summary"], [], "github", [], owner="p2") == [
        ("p2", "thread-summary")]
    # changed identities are what routing reads
    found = directory.find("p1", "comment-rewrite")
    store.update_installation(found.id, runtime.clock.now(), identities={"github": "new1"})
    assert owners([], ["comment-rewrite"], "github", ["gh1"]) == []
    assert owners([], ["comment-rewrite"], "github", ["new1"]) == [("p1", "comment-rewrite")]


def test_cli_install_enable_disable_list_runs(settings, runtime: HubRuntime,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TICKETHUB_DATABASE_URL", settings.effective_database_url)
    data = ["--data-dir", str(settings.data_dir)]
    cli_run = CliRunner().invoke
    result = cli_run(cli, ["agent", "install", "thread-summary", "--owner", "alice",
                           "--identity", "github=alice-gh", "--config", '{"words": 80}',
                           "--json", *data])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["config"] == {"words": 80}
    bad = cli_run(cli, ["agent", "install", "thread-summary", "--owner", "bob",
                        "--config", '{"words": 1}', *data])
    assert bad.exit_code == 6 and "config.words" in bad.output
    assert cli_run(cli, ["agent", "disable", "thread-summary", "--owner", "alice",
                         *data]).exit_code == 0
    listed = json.loads(cli_run(cli, ["agent", "list", "--json", *data]).output)
    assert {a["name"] for a in listed["agents"]} >= {"comment-rewrite", "thread-summary"}
    assert [(i["owner"], i["enabled"]) for i in listed["installations"]] == [
        ("alice", False)]
    assert cli_run(cli, ["agent", "enable", "thread-summary", "--owner", "alice",
                         *data]).exit_code == 0
    assert runtime.agents.directory.installations()[0].enabled
    runs = cli_run(cli, ["agent", "runs", "--owner", "alice", "--agent", "thread-summary",
                         "--json", *data])
    assert runs.exit_code == 0 and json.loads(runs.output) == []
    secret = cli_run(cli, ["agent", "secret", "alice", "token", *data],
                     input="ghp_cli_secret_value\n")
    assert secret.exit_code == 0 and "ghp_cli_secret_value" not in secret.output
    assert runtime.agents.directory.secret("alice", "token") == "ghp_cli_secret_value"
