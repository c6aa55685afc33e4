"""/hooks/github: signatures, replays, unconnected repositories, bad bodies — and the
end-to-end path from an agent's question to a collaborator's /answer on GitHub."""

from __future__ import annotations

import asyncio
import json

import httpx
from gh_fake import FakeGitHub
from gh_helpers import REPO, SECRET, comment_payload, deliver, eventually

from tickethub.api.app import create_app
from tickethub.channels.github import GithubChannel
from tickethub.channels.github.signature import sign
from tickethub.sdk import AsyncHub
from tickethub.server.runtime import HubRuntime


async def _mirrored(client: httpx.AsyncClient, github: GithubChannel, headers: dict[str, str],
                    **fields: object) -> tuple[int, int]:
    body = {"title": "Which port?", "kind": "question", "labels": ["github"], **fields}
    r = await client.post("/api/v1/tickets", json=body, headers=headers)
    assert r.status_code == 201, r.text
    ticket_id = r.json()["id"]
    link = await eventually(lambda: github.sync.link(ticket_id))
    return ticket_id, link.number


async def test_end_to_end_agent_asks_collaborator_answers_on_github(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient, connect, agent: dict[str, str]) -> None:
    connect()
    fake.grant(REPO, "maintainer", "write")
    sdk = AsyncHub("http://hub", agent["Authorization"].split()[1],
                   transport=httpx.ASGITransport(app=create_app(runtime)))
    ticket = await sdk.ask("Which port should the service use?", "Deploying today.",
                           labels=["github"])
    link = await eventually(lambda: github.sync.link(ticket.id))
    issue = fake.issue(REPO, link.number)
    assert issue["title"] == "Which port should the service use?"
    assert "Deploying today." in issue["body"]
    await eventually(lambda: runtime.tickets.get(ticket.id).refs.get("github")
                     == issue["html_url"])
    waiting = asyncio.create_task(sdk.wait(ticket.id, timeout=20))

    # a stranger's /answer first: kept, untrusted, no effect
    stranger = comment_payload("created", REPO, link.number, 901, "mallory", "/answer 6666",
                               association="NONE")
    r = await deliver(client, "issue_comment", stranger, delivery="d-stranger")
    assert r.status_code == 202
    await eventually(lambda: github.intake.outcomes.get("d-stranger") == "untrusted")
    assert not waiting.done()
    assert (await sdk.get(ticket.id)).status == "open"

    answer = comment_payload("created", REPO, link.number, 902, "maintainer", "/answer 8080")
    assert (await deliver(client, "issue_comment", answer)).status_code == 202
    done = await asyncio.wait_for(waiting, 10)
    assert done.status == "answered"
    assert done.answer is not None and done.answer.text == "8080"
    assert done.answer.by == "github:maintainer"
    messages = await sdk.messages(ticket.id)
    untrusted = [m for m in messages if m.body == "/answer 6666"]
    assert len(untrusted) == 1 and untrusted[0].trusted is False
    await eventually(lambda: (902, "+1") in fake.reactions)
    assert not any(c == 901 for c, _ in fake.reactions)
    # the issue closes and the status comment says answered
    await eventually(lambda: fake.issue(REPO, link.number)["state"] == "closed")
    status = [c for c in fake.issue_comments(REPO, link.number)
              if "tickethub status" in c["body"]]
    assert len(status) == 1
    await eventually(lambda: "**answered**" in fake.comments[status[0]["id"]]["body"])


async def test_missing_or_forged_signature_is_401_and_stores_nothing(
        github: GithubChannel, client: httpx.AsyncClient, connect) -> None:
    connect()
    payload = comment_payload("created", REPO, 1, 5, "maintainer", "/done")
    missing = await deliver(client, "issue_comment", payload, secret=None)
    forged = await deliver(client, "issue_comment", payload, secret="not-the-secret-at-all")
    wrong_body = await deliver(client, "issue_comment", payload,
                               signature=sign(SECRET, b'{"other": "body"}'))
    for r in (missing, forged, wrong_body):
        assert r.status_code == 401
        assert r.headers["content-type"].startswith("application/problem+json")
        assert r.json()["field"] == "X-Hub-Signature-256"
    assert github.sync.inbox_counts() == {}


async def test_replayed_delivery_has_no_second_effect(
        github: GithubChannel, fake: FakeGitHub, client: httpx.AsyncClient, connect,
        agent: dict[str, str]) -> None:
    connect()
    fake.grant(REPO, "maintainer", "admin")
    ticket_id, number = await _mirrored(client, github, agent)
    payload = comment_payload("created", REPO, number, 77, "maintainer", "Use 8443.")
    first = await deliver(client, "issue_comment", payload, delivery="same-id")
    again = await deliver(client, "issue_comment", payload, delivery="same-id")
    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json()["duplicate"] is True
    await eventually(lambda: github.intake.outcomes.get("same-id") == "answered")
    # the same comment under a new delivery id (GitHub's "redeliver") is a duplicate too
    await deliver(client, "issue_comment", payload, delivery="redelivered")
    await eventually(lambda: github.intake.outcomes.get("redelivered") == "duplicate")
    r = await client.get(f"/api/v1/tickets/{ticket_id}/messages", headers=agent)
    assert [m["body"] for m in r.json()].count("Use 8443.") == 2  # the comment + the answer
    assert github.sync.inbox_counts() == {"done": 2}


async def test_unconnected_repository_is_ignored_and_logged(
        github: GithubChannel, client: httpx.AsyncClient, connect, caplog) -> None:
    connect()
    payload = comment_payload("created", "someone/else", 1, 5, "maintainer", "/done")
    with caplog.at_level("INFO"):
        r = await deliver(client, "issue_comment", payload, delivery="elsewhere")
        assert r.status_code == 202
        await eventually(lambda: github.intake.outcomes.get("elsewhere"))
    assert github.intake.outcomes["elsewhere"] == "ignored: repository not connected"
    assert "someone/else" in caplog.text and "not connected" in caplog.text
    assert github.sync.inbox_counts() == {"ignored": 1}


async def test_ping_and_bad_bodies(github: GithubChannel, client: httpx.AsyncClient) -> None:
    import gh_examples

    ping = await deliver(client, "ping", gh_examples.webhook("ping"), delivery="p1")
    assert ping.status_code == 202
    await eventually(lambda: github.intake.outcomes.get("p1") == "ping")
    body = b"not json"
    r = await client.post("/hooks/github", content=body, headers={
        "X-GitHub-Event": "ping", "X-GitHub-Delivery": "x", "Content-Type": "application/json",
        "X-Hub-Signature-256": sign(SECRET, body)})
    assert r.status_code == 400 and r.json()["field"] == "body"
    body = json.dumps({"zen": "hi"}).encode()
    r = await client.post("/hooks/github", content=body, headers={
        "X-GitHub-Event": "ping", "X-Hub-Signature-256": sign(SECRET, body)})
    assert r.status_code == 422 and r.json()["field"] == "X-GitHub-Delivery"


async def test_form_encoded_delivery_is_accepted(
        github: GithubChannel, client: httpx.AsyncClient) -> None:
    import urllib.parse

    import gh_examples

    body = urllib.parse.urlencode({"payload": json.dumps(gh_examples.webhook("ping"))}).encode()
    r = await client.post("/hooks/github", content=body, headers={
        "X-GitHub-Event": "ping", "X-GitHub-Delivery": "form-1",
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Hub-Signature-256": sign(SECRET, body)})
    assert r.status_code == 202
    await eventually(lambda: github.intake.outcomes.get("form-1") == "ping")
