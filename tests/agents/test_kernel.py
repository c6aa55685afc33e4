"""The kernel through the offline harness (a real hub on SQLite, the real kernel, a
scripted model): triggers, scopes, budgets, the approval gate, audit lines, secrets."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import pytest
from sqlalchemy import text

from tickethub.agents import Manifest, Run
from tickethub.agents.builtins.thread_summary import agent as thread_summary
from tickethub.agents.testing import AgentHarness
from tickethub.domain.actors import Actor, ActorKind, Role
from tickethub.domain.agent_runs import RunStatus
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import TicketQuery
from tickethub.llm import Completion, ScriptedLLM, ToolCall, Usage
from tickethub.llm.port import Message, Tool

OWNER_PERSON = Actor("owner", Role.RESPONDER, ActorKind.PERSON)


class Tooly:
    """Lets the model call any tool (``run.converse``); scopes from the test."""

    def __init__(self, scopes: list[str], sensitive: list[str] | None = None,
                 triggers: list[str] | None = None, **limits: Any) -> None:
        self.manifest = Manifest.parse({
            "name": "tooly", "triggers": triggers or ["/go"], "scopes": scopes,
            "sensitive": sensitive or [], "limits": limits})

    async def run(self, run: Run) -> None:
        await run.converse("Do what the owner asks.")


def calls(*tool_calls: tuple[str, dict[str, Any]], tokens: int = 10) -> Completion:
    return Completion(None, tuple(ToolCall(f"c{i}", name, args)
                                  for i, (name, args) in enumerate(tool_calls)),
                      "tool_calls", Usage(tokens, 0))


async def test_triggers_command_mention_event_and_what_never_triggers() -> None:
    agent = Tooly(["comment"], triggers=["/go", "@owner", "issues.opened"])
    llm = ScriptedLLM(*["ok"] * 3)
    async with AgentHarness(agent, llm) as hub:
        assert (await hub.say("/go now")) is not None
        assert await hub.say("/go now", author="stranger") is None
        assert (await hub.say("hey @owner look", author="stranger")) is not None
        assert await hub.say("hey @owner look") is None  # the owner mentioning themself
        assert (await hub.say("title", author="stranger", name="issues.opened")) is not None
        assert await hub.say("/go\n\n<!-- tickethub-agent:x run:1 -->") is None
        assert await hub.say("/go again", name="issue_comment.edited") is None
    assert len(llm.calls) == 3


async def test_a_tool_outside_the_scopes_is_refused_audited_and_not_offered() -> None:
    llm = ScriptedLLM(calls(("open_ticket", {"title": "x"}), ("label", {"add": ["a"]}),
                            ("rm_rf", {})),
                      "done")
    async with AgentHarness(Tooly(["comment"]), llm) as hub:
        run = await hub.say("/go")
        assert run is not None and run.status is RunStatus.DONE
        assert [t["function"]["name"] for t in llm.calls[0][1] or []] == ["comment"]
        refused = [(a["action"], a["outcome"]) for a in hub.audit(run)
                   if a["outcome"] == "refused"]
        assert refused == [("open_ticket", "refused"), ("label", "refused"),
                           ("rm_rf", "refused")]
        assert hub.surface.labels == set()
        assert hub.hub.tickets.list(TicketQuery(parent_id=run.ticket_id)).items == []
        # the model was told, and the refusals cost no tool budget
        tool_replies = [m for m in llm.calls[1][0] if m["role"] == "tool"]
        assert all("refused" in m["content"] for m in tool_replies)
        assert run.used.tool_calls == 0


async def test_edit_own_comment_only_edits_the_agents_own_comments() -> None:
    llm = ScriptedLLM(calls(("comment", {"body": "v1"})),
                      calls(("edit_own_comment", {"comment_id": "2", "body": "v2"}),
                            ("edit_own_comment", {"comment_id": "1", "body": "hacked"})),
                      "done")
    async with AgentHarness(Tooly(["comment", "edit_own_comment"]), llm) as hub:
        run = await hub.say("/go")
        assert run is not None
        assert hub.surface.comments == ["v2"]
        assert hub.surface.bodies["1"] == "/go"  # the owner's comment is untouched
        outcomes = [(a["action"], a["outcome"]) for a in hub.audit(run)
                    if a["action"] != "run"]
        assert outcomes == [("comment", "done"), ("edit_own_comment", "done"),
                            ("edit_own_comment", "failed")]


@pytest.mark.parametrize(("limits", "replies", "spent"), [
    ({"llm_calls": 2}, [calls(("comment", {"body": "a"}))] * 3, "llm_calls"),
    ({"tool_calls": 1}, [calls(("comment", {"body": "a"}), ("comment", {"body": "b"}))],
     "tool_calls"),
    ({"tokens": 100}, [calls(("comment", {"body": "a"}), tokens=150)], "tokens"),
])
async def test_a_budget_overrun_stops_the_run_cleanly(
        limits: dict[str, int], replies: list[Completion], spent: str) -> None:
    async with AgentHarness(Tooly(["comment"], **limits), ScriptedLLM(*replies)) as hub:
        run = await hub.say("/go")
        assert run is not None and run.status is RunStatus.STOPPED
        assert run.error is not None and run.error.startswith(f"budget spent: {spent}")
        last = hub.audit(run)[-1]
        assert last["action"] == "run" and last["outcome"] == "stopped"
        assert last["detail"]["used"]["llm_calls"] == run.used.llm_calls
        assert hub.hub.tickets.get(run.ticket_id).status == "cancelled"
        if spent == "tokens":  # the over-budget reply is not acted on
            assert hub.surface.comments == []
        if spent == "tool_calls":
            assert hub.surface.comments == ["a"]


class SlowLLM:
    async def complete(self, messages: Sequence[Message], tools: Sequence[Tool] | None = None,
                       response_format: dict[str, Any] | None = None) -> Completion:
        await asyncio.sleep(30)
        raise AssertionError("not reached")


async def test_wall_time_stops_the_run() -> None:
    async with AgentHarness(Tooly(["comment"], seconds=0.05), SlowLLM()) as hub:
        run = await hub.say("/go")
        assert run is not None and run.status is RunStatus.STOPPED
        assert run.error == "budget spent: seconds 0.05"


async def _approval_ticket(hub: AgentHarness) -> int:
    for _ in range(500):
        page = hub.hub.tickets.list(TicketQuery(kind=Kind.APPROVAL, status=(Status.OPEN,)))
        if page.items:
            return page.items[0].id
        await asyncio.sleep(0.01)
    raise AssertionError("no approval ticket")


@pytest.mark.parametrize("decision", ["approve", "deny"])
async def test_a_sensitive_write_waits_for_the_owners_approval(decision: str) -> None:
    llm = ScriptedLLM(calls(("label", {"add": ["done"]})), "ok")
    agent = Tooly(["comment", "label"], sensitive=["label"])
    async with AgentHarness(agent, llm) as hub:
        running = asyncio.create_task(hub.say("/go"))
        approval_id = await _approval_ticket(hub)
        approval = hub.hub.tickets.get(approval_id)
        assert approval.assignee == "owner"
        assert approval.proposal == {"tool": "label", "arguments": {"add": ["done"]}}
        assert hub.surface.labels == set()  # nothing happened before the decision
        assert not running.done()
        if decision == "approve":
            await asyncio.to_thread(hub.hub.tickets.approve, OWNER_PERSON, approval_id,
                                    None, None, "web")
        else:
            await asyncio.to_thread(hub.hub.tickets.deny, OWNER_PERSON, approval_id,
                                    "no", "web")
        run = await running
        assert run is not None and run.status is RunStatus.DONE
        assert approval.parent_id == run.ticket_id
        label_lines = [a["outcome"] for a in hub.audit(run) if a["action"] == "label"]
        if decision == "approve":
            assert hub.surface.labels == {"done"}
            assert label_lines == ["pending", "done"]
        else:
            assert hub.surface.labels == set()
            assert label_lines == ["pending", "refused"]


async def test_ask_human_and_open_ticket_go_to_the_owner_under_the_run() -> None:
    llm = ScriptedLLM(calls(("ask_human", {"question": "Which release?"}),
                            ("open_ticket", {"title": "Follow up", "body": "later"})), "ok")
    async with AgentHarness(Tooly(["ask_human", "open_ticket"]), llm) as hub:
        run = await hub.say("/go")
        assert run is not None
        children = hub.hub.tickets.list(TicketQuery(parent_id=run.ticket_id)).items
        assert sorted((c.kind.value, c.title, c.assignee) for c in children) == [
            ("question", "Which release?", "owner"), ("task", "Follow up", "owner")]


async def test_secrets_never_reach_logs_prompts_events_or_comments(
        caplog: pytest.LogCaptureFixture) -> None:
    secret = "ghp_SuperSecretValue0123456789"
    # The owner pastes their token by mistake; the model (scripted) repeats it back.
    llm = ScriptedLLM(lambda messages: Completion(
        None, (ToolCall("c", "comment", {"body": f"you said {secret}"}),
               ToolCall("d", "nope", {"x": secret})), "tool_calls"),
        lambda messages: (_ for _ in ()).throw(RuntimeError(f"upstream echoed {secret}")))
    caplog.set_level(logging.DEBUG)
    async with AgentHarness(Tooly(["comment"]), llm) as hub:
        hub.agents.directory.set_secret("owner", "github-token", secret)
        # a fresh box (as after a restart) learns the owner's secrets at run start
        hub.agents.box._known.clear()
        run = await hub.say(f"/go my token is {secret}")
        assert run is not None and run.status is RunStatus.FAILED
        prompts = repr(llm.calls)
        with hub.hub.engine.connect() as c:
            stored = repr([*c.execute(text("SELECT * FROM events")),
                           *c.execute(text("SELECT * FROM messages")),
                           *c.execute(text("SELECT * FROM tickets")),
                           *c.execute(text("SELECT * FROM agent_runs")),
                           *c.execute(text("SELECT * FROM agent_secrets"))])
        assert "[redacted]" in prompts and "[redacted]" in stored
        assert hub.surface.comments == ["you said [redacted]"]
    assert secret not in prompts
    assert secret not in stored
    assert secret not in caplog.text


async def test_thread_summary_posts_text_the_model_gave_without_the_tool() -> None:
    llm = ScriptedLLM(Completion("Two people agree on v2.", usage=Usage(100, 10)))
    async with AgentHarness(thread_summary, llm, config={"words": 50}) as hub:
        hub.surface.add("bob", "I think v2")
        run = await hub.say("/summary")
        assert run is not None and run.status is RunStatus.DONE
        assert hub.surface.comments == ["Two people agree on v2."]
        assert "at most 50 words" in llm.calls[0][0][0]["content"]


async def test_chat_events_come_in_through_event_in() -> None:
    llm = ScriptedLLM(calls(("comment", {"body": "hello room"})), "ok")
    async with AgentHarness(Tooly(["comment"]), llm, source="chat") as hub:
        room, _ = hub.hub.tickets.ask(Actor("chat-bridge", Role.AGENT), _draft("Room #ops"))
        tasks = await hub.agents.kernel.event_in("chat", "message", "owner", "/go", room.id)
        (run,) = [await t for t in tasks]
        assert run.status is RunStatus.DONE and run.trigger == "chat:message"
        bodies = [m.body for m in hub.hub.tickets.messages(room.id)]
        assert any(b.startswith("hello room") for b in bodies)


def _draft(title: str) -> Any:
    from tickethub.domain.tickets import TicketDraft

    return TicketDraft(kind=Kind.INFO, title=title)


async def test_a_schedule_runs_when_due_once_per_period() -> None:
    from datetime import timedelta

    from tickethub.agents.schedules import run_due

    class Clock:
        def __init__(self, start: Any) -> None:
            self.at = start

        def now(self) -> Any:
            return self.at

    llm = ScriptedLLM(calls(("comment", {"body": "daily digest"})), "ok",
                      calls(("comment", {"body": "again"})), "ok")
    async with AgentHarness(Tooly(["comment"], triggers=["every 1h"]), llm,
                            source="schedule") as hub:
        clock = Clock(hub.hub.clock.now())
        args = (hub.agents.kernel, hub.agents.kernel._store, hub.hub.tickets, clock)
        (first,) = [await t for t in await run_due(*args)]
        assert first.status is RunStatus.DONE and first.trigger == "schedule:every 1h"
        assert await run_due(*args) == []  # not due yet
        clock.at += timedelta(minutes=61)
        (second,) = [await t for t in await run_due(*args)]
        assert second.status is RunStatus.DONE
        thread = hub.hub.tickets.list(TicketQuery(ref=("agent_schedule", "1"))).items
        assert len(thread) == 1 and thread[0].assignee == "owner"
        bodies = [m.body.split("\n\n")[0] for m in hub.hub.tickets.messages(thread[0].id)]
        assert bodies == ["daily digest", "again"]
        assert await hub.say("/go", author="owner") is None  # no command trigger
