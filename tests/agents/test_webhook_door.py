"""``POST /hooks/agents/{owner}``: signed with the owner's sealed webhook secret, an
event reaches only that owner's agents; a bad signature does nothing."""

from __future__ import annotations

import json

import httpx

from tickethub.agents import Manifest, Run
from tickethub.agents.component import install as install_agents
from tickethub.channels.github.signature import sign
from tickethub.llm import ScriptedLLM
from tickethub.server.runtime import HubRuntime


class Deployed:
    manifest = Manifest.parse({"name": "deployed", "triggers": ["deploy.finished"],
                               "scopes": ["comment"]})

    async def run(self, run: Run) -> None:
        done = await run.complete(run.context.to_messages("Announce the deploy."))
        await run.call("comment", "a deploy finished", body=done.content or "")


async def test_a_signed_event_runs_the_owners_agent_only(
        runtime: HubRuntime, client: httpx.AsyncClient) -> None:
    agents = install_agents(runtime, llm=ScriptedLLM("v2 is live"))
    agents.kernel.registry.register(Deployed())
    agents.directory.install("alice", "deployed")
    agents.directory.install("bob", "deployed")
    agents.directory.set_secret("alice", "webhook-secret", "alice-webhook-secret-1")
    body = json.dumps({"event": "deploy.finished", "text": "v2 deployed"}).encode()

    bad = await client.post("/hooks/agents/alice", content=body,
                            headers={"X-Hub-Signature-256": sign("wrong-secret", body)})
    assert bad.status_code == 401
    assert bad.json()["field"] == "X-Hub-Signature-256"
    assert (await client.post("/hooks/agents/carol", content=body)).status_code == 401

    good = await client.post("/hooks/agents/alice", content=body, headers={
        "X-Hub-Signature-256": sign("alice-webhook-secret-1", body)})
    assert good.status_code == 202, good.text
    assert good.json()["runs"] == 1
    await agents.kernel.drain()
    (run,) = agents.directory.runs("alice", "deployed")
    assert run.status == "done" and run.trigger == "webhook:deploy.finished"
    assert agents.directory.runs("bob", "deployed") == []
    thread = good.json()["ticket_id"]
    assert runtime.tickets.get(thread).assignee == "alice"
    assert [m.body.split("\n\n")[0] for m in runtime.tickets.messages(thread)] == [
        "v2 is live"]

    missing = json.dumps({"text": "no event"}).encode()
    refused = await client.post("/hooks/agents/alice", content=missing, headers={
        "X-Hub-Signature-256": sign("alice-webhook-secret-1", missing)})
    assert refused.status_code == 422 and refused.json()["field"] == "event"


async def test_a_body_that_is_no_json_object_is_refused_like_every_webhook_door(
        runtime: HubRuntime, client: httpx.AsyncClient) -> None:
    """The same check as ``/hooks/github`` and the chat doors (``api.json_bodies``): a
    400 ``malformed_json`` naming ``body`` for text that is not JSON and for JSON that
    is not an object; nothing runs."""
    agents = install_agents(runtime, llm=ScriptedLLM("unused"))
    agents.kernel.registry.register(Deployed())
    agents.directory.install("alice", "deployed")
    agents.directory.set_secret("alice", "webhook-secret", "alice-webhook-secret-1")
    for body in (b"deploy finished", b"\xff\xfe", b'["deploy.finished"]', b'"x"', b"12"):
        refused = await client.post("/hooks/agents/alice", content=body, headers={
            "X-Hub-Signature-256": sign("alice-webhook-secret-1", body)})
        assert refused.status_code == 400, (body, refused.text)
        problem = refused.json()
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert problem["field"] == "body", (body, problem)
        assert problem["code"] == "malformed_json", (body, problem)
    await agents.kernel.drain()
    assert agents.directory.runs("alice", "deployed") == []
