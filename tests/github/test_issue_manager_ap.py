"""issue-manager, gpt-pilot #89's flow: the owner says ``/shipped`` on a GitHub issue
that mirrors an Agent Protocol task; the agent comments on the issue and completes the
AP task (its ticket done, the note as the reply), acting with the owner's authority."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from gh_fake import FakeGitHub
from gh_helpers import REPO, comment_payload, deliver, eventually

from tickethub.agents.component import install as install_agents
from tickethub.channels.github import GithubChannel
from tickethub.domain.actors import Actor, ActorKind, Role
from tickethub.domain.agent_runs import RunStatus
from tickethub.domain.status import Status
from tickethub.llm import Completion, ScriptedLLM, ToolCall
from tickethub.server.runtime import HubRuntime
from tickethub.services.agent_tasks import AgentTaskService
from tickethub.services.github_sync import IssueLink
from tickethub.store.ap_records import SqlApStore

OWNER, LOGIN = "alice", "alice-gh"
NOTE = "Login page shipped: form, validation, tests."


async def _shipped(runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
                   client: httpx.AsyncClient, llm: ScriptedLLM, link: bool
                   ) -> tuple[str, int, int, list[dict[str, Any]]]:
    agents = install_agents(runtime, llm=llm)
    agents.directory.install(OWNER, "issue-manager", {}, {"github": LOGIN})
    tasks = AgentTaskService(SqlApStore(runtime.store), runtime.clock, runtime.bus)
    planner = Actor("gpt-pilot", Role.AGENT, ActorKind.AGENT)
    task = tasks.create(planner, "Story: the login page", {"app_id": "shop"})
    issue = fake.add_issue(REPO, "Story: the login page", "the story", [], "someone")
    if link:
        github.sync.save_link(IssueLink(task.ticket.id, REPO.lower(), issue["number"],
                                        issue["id"]))
    text = "/shipped the login page is live"
    comment = fake.add_comment(REPO, issue["number"], LOGIN, text)
    payload = comment_payload("created", REPO, issue["number"], comment["id"], LOGIN, text)
    assert (await deliver(client, "issue_comment", payload,
                          delivery=f"ship-{comment['id']}")).status_code == 202
    await eventually(lambda: agents.directory.runs(OWNER, "issue-manager"))
    await agents.kernel.drain()
    (run,) = agents.directory.runs(OWNER, "issue-manager")
    assert run.status is RunStatus.DONE, run.error
    assert run.ticket_id is not None
    audit = [m.data["audit"] for m in runtime.tickets.messages(run.ticket_id)
             if isinstance(m.data, dict) and "audit" in m.data]
    return task.record.task_id, task.ticket.id, issue["number"], audit


def _model() -> ScriptedLLM:
    return ScriptedLLM(
        Completion(None, (ToolCall("c1", "comment", {"body": NOTE}),
                          ToolCall("c2", "update_task", {"note": NOTE})), "tool_calls"),
        Completion("Done."))


async def test_shipped_updates_the_issue_and_completes_its_ap_task(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient) -> None:
    runtime.sessions.set_password(OWNER, "a-long-password-1", Role.RESPONDER)
    task_id, ticket_id, number, audit = await _shipped(runtime, github, fake, client,
                                                       _model(), link=True)
    done = next(a for a in audit if a["action"] == "update_task")
    assert done["outcome"] == "done" and done["detail"]["ap_task_id"] == task_id
    assert any(c["body"].startswith(NOTE) for c in fake.issue_comments(REPO, number))
    ticket = runtime.tickets.get(ticket_id)
    assert ticket.status == Status.DONE
    assert ticket.refs["ap_task_id"] == task_id
    replies = [m for m in runtime.tickets.messages(ticket_id) if m.body == NOTE]
    assert [(m.author, m.via) for m in replies] == [(OWNER, "agent")]
    tasks = AgentTaskService(SqlApStore(runtime.store), runtime.clock, runtime.bus)
    assert tasks.get(task_id).ticket.status == Status.DONE  # what the AP door reports


@pytest.mark.parametrize(("link", "actor", "why"), [
    (False, True, "not linked to a hub task"),
    (True, False, "alice is not a hub actor"),
])
async def test_no_linked_task_or_no_authority_changes_no_task(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient, link: bool, actor: bool, why: str) -> None:
    """An issue with no hub task: the tool fails and says so; an owner who is not a hub
    actor cannot have their agent close a task they could not close themselves."""
    if actor:
        runtime.sessions.set_password(OWNER, "a-long-password-1", Role.RESPONDER)
    _, ticket_id, _, audit = await _shipped(runtime, github, fake, client, _model(),
                                            link=link)
    assert runtime.tickets.get(ticket_id).status != Status.DONE
    failed = [a for a in audit if a["action"] == "update_task"]
    assert [a["outcome"] for a in failed] == ["failed"]
    assert why in failed[0]["detail"]["error"]
