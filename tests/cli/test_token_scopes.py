"""``tickethub token create --scope``: a wider read scope for one token, and one clear
line (non-zero exit) for a scope the hub does not know."""

from __future__ import annotations

import json

from tickethub.cli import output
from tickethub.sdk import Hub


def _token(run, *args: str) -> str:
    created = run("token", "create", "--role", "agent", *args)
    assert created.exit_code == 0, created.output
    return created.stdout.strip()


def test_a_read_all_token_reads_other_agents_tickets(run, hub_process) -> None:
    owner = _token(run, "--name", "scope-owner")
    plain = _token(run, "--name", "scope-plain")
    auditor = _token(run, "--name", "scope-auditor", "--scope", "read:all")
    with Hub(hub_process.url, owner) as hub:
        ticket_id = hub.ask("the owner's question").id
    assert run("show", str(ticket_id), token=plain).exit_code == output.NOT_FOUND
    shown = run("show", str(ticket_id), "--json", token=auditor)
    assert shown.exit_code == 0, shown.output
    assert "the owner's question" in shown.stdout
    listed = json.loads(run("token", "list", "--json").stdout)
    scopes = {t["name"]: t["scopes"] for t in listed}
    assert scopes["scope-auditor"] == ["read:all"] and scopes["scope-plain"] == []
    assert "[read:all]" in run("token", "list").stdout


def test_an_unknown_scope_is_one_clear_line(run) -> None:
    result = run("token", "create", "--role", "agent", "--name", "scope-bad",
                 "--scope", "write:everything")
    assert result.exit_code == output.INVALID
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "write:everything" in lines[0] and "read:all" in lines[0]
    listed = json.loads(run("token", "list", "--json").stdout)
    assert "scope-bad" not in {t["name"] for t in listed}
