"""The GitHub Actions runner end to end: GitHub's ``issue_comment`` webhook into
``/hooks/github``; the hub dispatches the owner's workflow on the fake GitHub (the
dispatch API with ``return_run_details``); the test plays the workflow with the real
workflow-side code (``agents/runners/remote.py``) against the hub's ASGI app; the hub
applies the result through the run's toolbox and the comment lands on the fake GitHub."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from gh_fake import FakeGitHub
from gh_helpers import REPO, comment_payload, deliver, eventually

from tickethub.agents import Manifest, Run
from tickethub.agents.component import PersonalAgents
from tickethub.agents.component import install as install_agents
from tickethub.agents.runners.grants import SIGNATURE_HEADER, body_signature
from tickethub.agents.runners.remote import execute
from tickethub.channels.github import GithubChannel
from tickethub.domain.actors import Actor, ActorKind, Role
from tickethub.domain.agent_runs import AgentRun, RunStatus
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import TicketQuery
from tickethub.llm import Completion, ScriptedLLM, Usage
from tickethub.server.runtime import HubRuntime

OWNER = "alice"
LOGIN = "alice-gh"
AGENTS_REPO = "alice-gh/my-agents"


class Remote:
    """An agent whose manifest runs it in the owner's repository; in the workflow it
    asks its model and comments (and labels, when the model says ``label:``)."""

    def __init__(self, seconds: float = 30, sensitive: tuple[str, ...] = ()) -> None:
        self.manifest = Manifest.parse({
            "name": "remote", "triggers": ["/remote"], "scopes": ["comment", "label"],
            "sensitive": list(sensitive),
            "limits": {"seconds": seconds, "llm_calls": 2, "tokens": 1000},
            "runner": {"kind": "actions", "repo": AGENTS_REPO}})

    async def run(self, run: Run) -> None:
        done = await run.complete(run.context.to_messages("Answer the owner."))
        text = done.content or ""
        if text.startswith("label:"):
            await run.call("label", "the model said so", add=[text.split(":", 1)[1]])
        else:
            await run.call("comment", "the owner asked", body=text)


def _setup(runtime: HubRuntime, agent: Remote) -> PersonalAgents:
    agents = install_agents(runtime, llm=ScriptedLLM())  # the hub's model is never asked
    agents.kernel.registry.register(agent, "test")
    agents.directory.install(OWNER, "remote", {}, {"github": LOGIN})
    return agents


async def _trigger(client: httpx.AsyncClient, github: GithubChannel, fake: FakeGitHub,
                   text: str = "/remote what is due?") -> tuple[int, dict[str, Any]]:
    before = len(fake.dispatches)
    issue = fake.add_issue(REPO, "Plans", "the plan", [], "someone")
    comment = fake.add_comment(REPO, issue["number"], LOGIN, text)
    payload = comment_payload("created", REPO, issue["number"], comment["id"], LOGIN, text)
    assert (await deliver(client, "issue_comment", payload,
                          delivery=f"act-{comment['id']}")).status_code == 202
    dispatch = await eventually(lambda: len(fake.dispatches) > before and fake.dispatches[-1])
    return issue["number"], dispatch


def _audit(runtime: HubRuntime, run: AgentRun) -> list[dict[str, Any]]:
    assert run.ticket_id is not None
    return [m.data["audit"] for m in runtime.tickets.messages(run.ticket_id)
            if isinstance(m.data, dict) and "audit" in m.data]


async def _fetch(client: httpx.AsyncClient, url: str) -> dict[str, Any]:
    answer = await client.get(url)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


async def _post(client: httpx.AsyncClient, document: dict[str, Any], result: Any,
                key: str | None = None) -> httpx.Response:
    body = json.dumps(result).encode()
    return await client.post(document["result_url"], content=body, headers={
        SIGNATURE_HEADER: body_signature(key or document["result_key"], body)})


def _problem(answer: httpx.Response, status: int, field: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert answer.json()["field"] == field


async def test_a_run_in_the_owners_workflow_comments_through_the_hub(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient) -> None:
    agents = _setup(runtime, Remote())
    number, dispatch = await _trigger(client, github, fake)
    # the dispatch: the owner's workflow, with the run id and the signed URL only
    assert dispatch["repo"] == AGENTS_REPO and dispatch["workflow"] == "tickethub-agent.yml"
    assert dispatch["ref"] == "main" and dispatch["return_run_details"] is True
    inputs = dispatch["inputs"]
    assert set(inputs) == {"run_id", "context_url"}
    url = urlsplit(inputs["context_url"])
    assert url.path == f"/hooks/agents/runs/{inputs['run_id']}/context"
    assert set(parse_qs(url.query)) == {"expires", "signature"}
    assert "what is due" not in json.dumps(dispatch) and "token" not in json.dumps(dispatch)
    request = fake.calls("POST", "/dispatches")[0]
    assert request.url.path == (f"/repos/{AGENTS_REPO}/actions/workflows/"
                                "tickethub-agent.yml/dispatches")

    # the workflow: fetch, run with its own model, post the signed result
    model = ScriptedLLM(Completion("Two things are due.", usage=Usage(40, 5)))
    result, answer = await execute(agents.kernel.registry.get("remote"),
                                   inputs["context_url"], model, client)
    assert answer.status_code == 202, answer.text
    assert [a.type for a in result.actions] == ["comment"]
    document = model.calls[0][0][1]["content"]  # the model saw the hub's context
    assert "/remote what is due?" in document
    await eventually(lambda: any(c["body"].startswith("Two things are due.")
                                 for c in fake.issue_comments(REPO, number)))
    await agents.kernel.drain()
    (run,) = agents.directory.runs(OWNER, "remote")
    assert run.status is RunStatus.DONE and str(run.id) == inputs["run_id"]
    assert run.used.llm_calls == 1 and run.used.tokens == 45 and run.used.tool_calls == 1
    audit = _audit(runtime, run)
    sent = next(a for a in audit if a["action"] == "dispatch")
    run_id = fake.dispatches[0]["id"]
    assert sent["detail"]["workflow_run_id"] == run_id  # correlated, no polling
    assert sent["detail"]["html_url"].endswith(f"/actions/runs/{run_id}")
    assert [(a["action"], a["outcome"]) for a in audit][-3:] == [
        ("result", "received"), ("comment", "done"), ("run", "done")]
    # the context is handed out once; a replayed result is refused
    _problem(await client.get(inputs["context_url"]), 409, "run_id")
    body = result.model_dump_json().encode()
    replay = await client.post(f"/hooks/agents/runs/{run.id}/result", content=body)
    _problem(replay, 409, "run_id")


async def test_expired_tampered_and_forged_are_refused(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient) -> None:
    agents = _setup(runtime, Remote())
    runner = agents.kernel.actions
    assert runner is not None
    _, dispatch = await _trigger(client, github, fake)
    url = dispatch["inputs"]["context_url"]
    run_id = int(dispatch["inputs"]["run_id"])
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    sig, expires = query["signature"][0], int(query["expires"][0])
    flipped = sig[:-1] + ("0" if sig[-1] != "0" else "1")
    base = f"/hooks/agents/runs/{run_id}/context"
    _problem(await client.get(f"{base}?expires={expires}&signature={flipped}"), 401,
             "signature")
    _problem(await client.get(f"{base}?expires={expires + 3600}&signature={sig}"), 401,
             "signature")  # a later expiry under the same signature
    _problem(await client.get(f"/hooks/agents/runs/{run_id + 1}/context?{parts.query}"),
             404, "run_id")  # another run's URL
    runner.now = lambda: time.time() + 3600
    _problem(await client.get(url), 401, "expires")
    runner.now = time.time
    document = await _fetch(client, url)
    assert document["run_id"] == run_id and document["scopes"] == ["comment", "label"]

    good = {"run_id": run_id, "actions": [{"type": "comment", "body": "hi"}]}
    _problem(await _post(client, document, good, key="not-the-key"), 401, SIGNATURE_HEADER)
    unsigned = await client.post(document["result_url"], content=json.dumps(good))
    _problem(unsigned, 401, SIGNATURE_HEADER)
    _problem(await _post(client, document, {**good, "run_id": run_id + 7}), 422, "run_id")
    bad = {"run_id": run_id, "actions": [{"type": "comment", "body": ""}]}
    _problem(await _post(client, document, bad), 422, "actions.0.comment.body")
    sneaky = {"run_id": run_id, "actions": [{"type": "merge", "branch": "main"}]}
    _problem(await _post(client, document, sneaky), 422, "actions.0")
    # nothing above was applied, and the run still waits for a good result
    assert agents.directory.runs(OWNER, "remote")[0].status is RunStatus.RUNNING
    assert (await _post(client, document, good)).status_code == 202
    await agents.kernel.drain()
    assert agents.directory.runs(OWNER, "remote")[0].status is RunStatus.DONE


async def test_a_run_that_never_reports_fails_and_a_late_result_is_refused(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient) -> None:
    agents = _setup(runtime, Remote(seconds=0.5))
    _, dispatch = await _trigger(client, github, fake)
    document = await _fetch(client, dispatch["inputs"]["context_url"])
    await agents.kernel.drain()
    (run,) = agents.directory.runs(OWNER, "remote")
    assert run.status is RunStatus.FAILED
    assert run.error is not None and "did not report back within 0.5 s" in run.error
    assert runtime.tickets.get(run.ticket_id).status == Status.CANCELLED
    late = {"run_id": run.id, "actions": [{"type": "comment", "body": "too late"}]}
    _problem(await _post(client, document, late), 409, "run_id")
    assert not any("too late" in c["body"] for c in fake.comments.values())


async def test_budget_and_approval_apply_to_a_workflows_actions(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient) -> None:
    agents = _setup(runtime, Remote(sensitive=("label",)))
    number, dispatch = await _trigger(client, github, fake)
    # over the token budget: the actions are not applied, the run stops
    document = await _fetch(client, dispatch["inputs"]["context_url"])
    over = {"run_id": document["run_id"], "usage": {"llm_calls": 1, "tokens": 5000},
            "actions": [{"type": "comment", "body": "expensive"}]}
    assert (await _post(client, document, over)).status_code == 202
    await agents.kernel.drain()
    (stopped,) = agents.directory.runs(OWNER, "remote")
    assert stopped.status is RunStatus.STOPPED and stopped.error is not None
    assert "tokens" in stopped.error
    assert not any("expensive" in c["body"] for c in fake.issue_comments(REPO, number))

    # a sensitive label waits for the owner's approval
    _, dispatch = await _trigger(client, github, fake)
    model = ScriptedLLM(Completion("label:shipped"))
    posting = asyncio.create_task(execute(agents.kernel.registry.get("remote"),
                                          dispatch["inputs"]["context_url"], model, client))
    approval = await eventually(lambda: runtime.tickets.list(TicketQuery(
        kind=Kind.APPROVAL, status=(Status.OPEN,))).items)
    assert approval[0].proposal == {"tool": "label", "arguments": {"add": ["shipped"],
                                                                  "remove": []}}
    assert fake.calls("PUT", "/labels") == []
    owner = Actor(OWNER, Role.RESPONDER, ActorKind.PERSON)
    await asyncio.to_thread(runtime.tickets.approve, owner, approval[0].id, None, None,
                            "web")
    _, answer = await posting
    assert answer.status_code == 202
    await agents.kernel.drain()
    await eventually(lambda: fake.calls("PUT", "/labels"))
    latest = agents.directory.runs(OWNER, "remote")[0]
    assert latest.status is RunStatus.DONE
    assert [a["outcome"] for a in _audit(runtime, latest) if a["action"] == "label"] == [
        "pending", "done"]
