"""The workflow side of the Actions runner, offline: the recording toolbox checks scope,
arguments and the tool budget before it records anything; the command refuses to start
without a context URL."""

from __future__ import annotations

import pytest

from tickethub.agents.budget import Budget, BudgetExceeded
from tickethub.agents.manifest import Limits, Scope
from tickethub.agents.runners.remote import RecordingTools, main


async def test_recording_tools_check_before_they_record() -> None:
    tools = RecordingTools(frozenset({Scope.COMMENT, Scope.LABEL}), Budget(Limits(tool_calls=2)))
    assert [t["function"]["name"] for t in tools.specs()] == ["comment", "label"]
    refused = await tools.call("edit_owner_comment", {"body": "x"}, "a stranger asked")
    assert not refused.ok and "not granted" in refused.text
    bad = await tools.call("comment", {"body": ""})
    assert not bad.ok and tools.actions == []
    assert (await tools.call("comment", {"body": "hi"}, "asked")).ok
    assert (await tools.call("label", {"add": ["done"]})).ok
    assert [a.model_dump() for a in tools.actions] == [
        {"type": "comment", "body": "hi", "why": "asked"},
        {"type": "label", "add": ["done"], "remove": [], "why": ""}]
    assert tools.posted == ["pending-1"]
    with pytest.raises(BudgetExceeded):
        await tools.call("comment", {"body": "one more"})


def test_the_command_needs_a_context_url(monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("CONTEXT_URL", raising=False)
    assert main(["--agent", "thread-summary"]) == 2
    assert capsys.readouterr().err.startswith("error: no context URL")
