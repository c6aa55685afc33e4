"""The CLI's commands against a real hub: output, --json, and what they change."""

from __future__ import annotations

import json

import pytest

from tickethub.cli import asking, reading, responding, tokens
from tickethub.cli.main import cli
from tickethub.sdk import Hub


def ask_id(run, *args: str) -> int:
    result = run("ask", *args, "-q")
    assert result.exit_code == 0, result.output
    return int(result.stdout.strip())


def test_ask_show_answer_round_trip(run, admin: Hub) -> None:
    ticket_id = ask_id(run, "Which region?", "--body", "for the cluster", "--label", "infra",
                       "--assignee", "alice")
    shown = run("show", str(ticket_id))
    assert shown.exit_code == 0
    assert f"#{ticket_id} Which region?" in shown.stdout
    assert "for the cluster" in shown.stdout and "labels: infra" in shown.stdout
    answered = run("answer", str(ticket_id), "eu-west-1", "--data", '{"replicas": 3}')
    assert answered.exit_code == 0
    assert answered.stdout.strip() == f"#{ticket_id} is answered: Which region?"
    ticket = admin.get(ticket_id)
    assert ticket.answer.text == "eu-west-1" and ticket.answer.data == {"replicas": 3}
    assert ticket.answer.via == "cli"  # the CLI says which channel it is
    data = json.loads(run("show", str(ticket_id), "--json").stdout)
    assert data["ticket"]["answer"]["via"] == "cli" and data["ticket"]["id"] == ticket_id
    assert [(m["kind"], m["via"]) for m in data["messages"]] == [("answer", "cli")]


def test_ask_text_and_json_output(run) -> None:
    text = run("ask", "Plain?")
    assert text.exit_code == 0
    assert text.stdout.startswith("asked #") and "/t/" in text.stdout
    data = json.loads(run("ask", "As JSON?", "--kind", "task", "--json").stdout)
    assert (data["title"], data["kind"], data["status"]) == ("As JSON?", "task", "open")


def test_ask_with_schema_proposal_refs_due_and_body_from_stdin(run, admin: Hub, tmp_path
                                                                ) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text('{"type": "object", "required": ["ok"]}')
    result = run("ask", "Deploy?", "--kind", "approval", "--schema", str(schema),
                 "--proposal", '{"ok": true}', "--ref", "build=42", "--due", "2h",
                 "--body", "-", "--json", input="long details\n")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["response_schema"] == {"type": "object", "required": ["ok"]}
    assert data["proposal"] == {"ok": True} and data["refs"] == {"build": "42"}
    assert data["body"] == "long details\n" and data["due_at"] is not None


def test_approve_deny_post_and_status_moves(run, admin: Hub, responder_token: str) -> None:
    yes = ask_id(run, "ship?", "--kind", "approval")
    no = ask_id(run, "drop?", "--kind", "approval")
    own = run("approve", str(yes))  # whoever asked may not approve it
    assert own.exit_code == 4 and own.stderr.startswith("error: ")
    approved = run("approve", str(yes), "-m", "go", "--edited", '{"n": 1}',
                   token=responder_token)
    assert approved.exit_code == 0, approved.output
    assert run("deny", str(no), "--reason", "never", token=responder_token).exit_code == 0
    assert admin.get(yes).approved and admin.get(yes).answer.data == {"n": 1}
    assert admin.get(no).denied and admin.get(no).answer.text == "never"

    task = ask_id(run, "write docs", "--kind", "task")
    posted = run("post", str(task), "started", "--json")
    assert json.loads(posted.stdout)["via"] == "cli"
    assert run("start", str(task)).stdout.strip() == f"#{task} is in_progress: write docs"
    assert run("defer", str(task), "--until", "1d").exit_code == 0
    assert admin.get(task).status == "deferred"
    assert run("transition", str(task), "in_progress").exit_code == 0
    assert run("assign", str(task), "bob").exit_code == 0
    assert run("label", str(task), "--add", "docs").exit_code == 0
    assert run("done", str(task)).exit_code == 0
    assert run("reopen", str(task)).exit_code == 0
    assert run("cancel", str(task), "-m", "not needed").exit_code == 0
    final = admin.get(task)
    assert (final.status, final.assignee, final.labels) == ("cancelled", "bob", ("docs",))


def test_list_filters_and_json(run, admin: Hub) -> None:
    ids = [ask_id(run, f"listed {i}", "--label", "cli-list") for i in range(3)]
    admin.answer(ids[0], "done")
    rows = run("list", "--label", "cli-list").stdout.splitlines()
    assert [int(r.split()[0].lstrip("#")) for r in rows] == sorted(ids, reverse=True)
    open_only = json.loads(run("list", "--label", "cli-list", "--status", "open",
                               "--json").stdout)
    assert sorted(t["id"] for t in open_only) == sorted(ids[1:])
    assert len(json.loads(run("list", "--label", "cli-list", "-n", "2", "--json").stdout)) == 2
    everything = json.loads(run("list", "--label", "cli-list", "--all", "--json").stdout)
    assert len(everything) == 3
    empty = run("list", "--label", "no-such-label")
    assert empty.exit_code == 0 and empty.stdout == "" and "no tickets" in empty.stderr


def test_tree(run) -> None:
    root = ask_id(run, "root task", "--kind", "task")
    child = ask_id(run, "child", "--parent", str(root))
    lines = run("tree", str(root)).stdout.splitlines()
    assert lines[0].startswith(f"#{root}") and lines[1].startswith(f"  #{child}")
    data = json.loads(run("tree", str(root), "--json").stdout)
    assert data["children"][0]["ticket"]["id"] == child
    export = json.loads(run("tree", str(root), "--format", "json").stdout)
    assert [(i["id"], i["parent_id"], i["kind"], i["status"]) for i in export["issues"]] == [
        (root, None, "task", "open"), (child, root, "question", "open")]
    markdown = run("tree", str(root), "--format", "markdown").stdout
    assert "root task" in markdown and "child" in markdown


def test_watch_prints_events(run) -> None:
    ticket = ask_id(run, "watched")
    run("post", str(ticket), "hi")
    result = run("watch", "--ticket", str(ticket), "--since", "0", "--count", "2", "--json")
    assert result.exit_code == 0
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["type"] for e in events] == ["ticket.created", "message.posted"]
    text = run("watch", "--ticket", str(ticket), "--since", "0", "--count", "1")
    assert "ticket.created" in text.stdout and f"#{ticket}" in text.stdout


def test_tokens(run, hub_process) -> None:
    created = run("token", "create", "--role", "agent", "--name", "cli-bot")
    assert created.exit_code == 0
    token = created.stdout.strip()
    assert token.startswith("th_")
    with Hub(hub_process.url, token) as bot:
        assert bot.me()["name"] == "cli-bot"
    listed = json.loads(run("token", "list", "--json").stdout)
    mine = [t for t in listed if t["name"] == "cli-bot"]
    assert len(mine) == 1 and "token" not in mine[0]
    assert "cli-bot" in run("token", "list").stdout
    assert run("token", "revoke", str(mine[0]["id"])).exit_code == 0
    assert run("list", token=token).exit_code == 4  # revoked: 401


def test_flags_override_the_environment(run, hub_process) -> None:
    result = run("list", "--url", hub_process.url, "--token", "th_admin_cli_" + "c" * 36,
                 token="wrong", url="http://127.0.0.1:1")
    assert result.exit_code == 0


MINE = [[c.name] for c in (asking.ask, asking.wait, *responding.COMMANDS, *reading.COMMANDS)]
MINE += [["token", name] for name in tokens.token.commands]


@pytest.mark.parametrize("path", MINE, ids=" ".join)
def test_every_command_explains_itself_with_an_example(path: list[str], run) -> None:
    result = run(*path, "--help")
    assert result.exit_code == 0
    assert "Example" in result.stdout, f"{' '.join(path)} --help has no example"
    assert "TICKETHUB_URL" in result.stdout and "TICKETHUB_TOKEN" in result.stdout


def test_the_group_help_lists_the_commands(run) -> None:
    result = run("--help")
    assert all(name in result.stdout for name in cli.commands)


def test_show_keeps_every_decision_after_a_reopen(run, admin: Hub, responder_token: str
                                                  ) -> None:
    plan = ask_id(run, "scale?", "--kind", "approval")
    assert run("approve", str(plan), "--edited", '{"hosts": 2}',
               token=responder_token).exit_code == 0
    assert run("reopen", str(plan)).exit_code == 0
    assert run("deny", str(plan), "--reason", "not now", token=responder_token).exit_code == 0
    shown = run("show", str(plan)).stdout
    assert '[edited]: {"hosts": 2}' in shown and "[denied]: not now" in shown
    data = json.loads(run("show", str(plan), "--json").stdout)
    assert [(m["decision"], m["data"]) for m in data["messages"]] == [
        ("edited", {"hosts": 2}), ("denied", None)]
