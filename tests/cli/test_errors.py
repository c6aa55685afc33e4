"""Bad input and failures: one line on stderr, nothing on stdout, a mapped exit code."""

from __future__ import annotations

import pytest

from tickethub.cli import output
from tickethub.sdk import Hub
from tickethub.sdk.testing import free_port


def one_error_line(result) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert result.stdout == ""
    return lines[0]


def test_unknown_ticket(run) -> None:
    for command in (["show", "999999"], ["answer", "999999", "x"], ["tree", "999999"],
                    ["wait", "999999"]):
        result = run(*command)
        assert result.exit_code == output.NOT_FOUND == 3
        assert one_error_line(result) == \
            "error: ticket 999999 does not exist (not_found, field id)"


def test_bad_json_is_refused_before_anything_is_sent(run, admin: Hub) -> None:
    ticket = admin.ask("still open?")
    result = run("answer", str(ticket.id), "--data", "{not json")
    assert result.exit_code == output.USAGE == 2
    line = one_error_line(result)
    assert line.startswith("error: --data is not valid JSON: ")
    assert line.endswith("(bad_json, field data)")
    assert admin.get(ticket.id).waiting  # nothing was sent


@pytest.mark.parametrize(("args", "field"), [
    (["ask", "x", "--proposal", "[1,"], "proposal"),
    (["ask", "x", "--due", "tomorrow-ish"], "due"),
    (["ask", "x", "--ref", "no-equals-sign"], "ref"),
    (["ask", "x", "--schema", "/no/such/file.json"], "schema"),
    (["approve", "1", "--edited", "nope"], "edited"),
    (["defer", "1", "--until", "later"], "until"),
    (["answer", "1"], "text"),
])
def test_bad_command_line_values(run, args: list[str], field: str) -> None:
    result = run(*args)
    assert result.exit_code == 2
    assert one_error_line(result).endswith(f", field {field})")


def test_missing_token(run) -> None:
    result = run("list", token="")
    assert result.exit_code == output.NOT_ALLOWED == 4
    line = one_error_line(result)
    assert "(unauthenticated" in line
    assert "no token was given: set TICKETHUB_TOKEN or pass --token (" in line
    assert "token=" not in line  # the SDK's wording (a keyword argument) is not the CLI's


def test_wrong_role(run, hub_process, admin: Hub) -> None:
    agent = admin.create_token("agent", "cli-agent")
    result = run("token", "create", "--role", "admin", "--name", "x", token=agent)
    assert result.exit_code == 4
    assert "(forbidden" in one_error_line(result)


def test_illegal_transition_is_a_conflict(run, admin: Hub) -> None:
    ticket = admin.ask("finish me")
    admin.transition(ticket.id, "done")
    result = run("transition", str(ticket.id), "in_progress")
    assert result.exit_code == output.CONFLICT == 5
    line = one_error_line(result)
    assert "'done'" in line and "'in_progress'" in line
    assert line.endswith("(illegal_transition, field status)")


def test_answer_that_fails_the_schema_names_the_field(run, admin: Hub) -> None:
    ticket = admin.ask("how many?", response_schema={
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    result = run("answer", str(ticket.id), "--data", '{"n": "three"}')
    assert result.exit_code == output.INVALID == 6
    assert "(validation_failed, field " in one_error_line(result)
    assert admin.get(ticket.id).waiting


def test_hub_not_running(run) -> None:
    result = run("list", url=f"http://127.0.0.1:{free_port()}")
    assert result.exit_code == output.UNAVAILABLE == 7
    assert "cannot reach the hub" in one_error_line(result)


def test_click_usage_errors_keep_exit_code_2(run) -> None:
    assert run("show", "not-a-number").exit_code == 2
    assert run("ask").exit_code == 2
    assert run("ask", "x", "--kind", "poem").exit_code == 2


def test_wait_says_once_that_it_is_retrying(run) -> None:
    result = run("wait", "1", "--timeout", "1.5", url=f"http://127.0.0.1:{free_port()}")
    assert result.exit_code == output.UNAVAILABLE
    lines = result.stderr.splitlines()
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith("hub unavailable: cannot reach the hub at http://127.0.0.1:")
    assert lines[0].endswith("; retrying until it is back")
    assert lines[1].startswith("error: cannot reach the hub")
    assert result.stdout == ""
