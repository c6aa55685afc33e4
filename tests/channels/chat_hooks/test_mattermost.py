"""``POST /hooks/mattermost`` with Mattermost's outgoing webhook and slash command
payloads (form and JSON): tokens, redeliveries, threads, and foodselection end to end
with the replies posted to a stand-in ``/api/v4/posts`` under the right root."""

from __future__ import annotations

import httpx
from bench.chat_standin import StandIn

from tests.channels.chat_hooks.conftest import stored
from tests.channels.chat_hooks.flow import order_lunch, saved_order
from tests.channels.chat_hooks.payloads.mattermost import CHANNEL, outgoing, slash
from tickethub.server.runtime import HubRuntime


async def test_an_unknown_token_is_401_and_nothing_is_queued(
        client: httpx.AsyncClient, runtime: HubRuntime) -> None:
    forged = {**outgoing("alice", "@bot help", "p1"), "token": "guessed"}
    r = await client.post("/hooks/mattermost", data=forged)
    assert r.status_code == 401
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["field"] == "token"
    del forged["token"]
    r = await client.post("/hooks/mattermost", json=forged)
    assert r.status_code == 401
    assert stored(runtime, "mattermost") == []


async def test_bad_payloads_name_the_field(client: httpx.AsyncClient) -> None:
    r = await client.post("/hooks/mattermost", content=b"[1]",
                          headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.json()["field"] == "body"
    body = outgoing("alice", "hi", "p2")
    del body["channel_id"]
    r = await client.post("/hooks/mattermost", data=body)
    assert r.status_code == 422
    assert r.json()["field"] == "channel_id"


async def test_foodselection_over_outgoing_webhooks(
        client: httpx.AsyncClient, runtime: HubRuntime, standin: StandIn) -> None:
    root = "rootpost0000000000000000001"
    posts = iter(range(1, 100))

    async def start() -> None:
        first = outgoing("alice", "@bot foodselection tomorrow", root)
        for _ in range(2):  # Mattermost redelivers the same post: one conversation
            r = await client.post("/hooks/mattermost", data=first)
            assert r.status_code == 200

    async def say(who: str, text: str) -> None:
        r = await client.post("/hooks/mattermost",
                              json=outgoing(who, text, f"post{next(posts)}", root))
        assert r.status_code == 200

    calls = await order_lunch(start, say, standin)
    for call in calls:
        assert call.path == "/api/v4/posts"
        assert call.body["channel_id"] == CHANNEL and call.body["root_id"] == root
        assert call.headers["Authorization"] == "Bearer mm-bot-token"
    assert len(standin.calls) == 4
    saved_order(runtime, "mattermost:bob00id")


async def test_a_slash_command_opens_a_thread_the_conversation_lives_in(
        client: httpx.AsyncClient, runtime: HubRuntime, standin: StandIn) -> None:
    r = await client.post("/hooks/mattermost",
                          data=slash("alice", "/foodselection", "tomorrow"))
    assert r.status_code == 200
    opened = (await standin.wait_for(2))
    assert opened[0].body["root_id"] == ""  # the thread's root, posted by the hook
    assert opened[0].body["message"] == "@alice: /foodselection tomorrow"
    root = f"botpost{1:020d}"
    assert opened[1].body["root_id"] == root and "Which dish" in opened[1].body["message"]
    r = await client.post("/hooks/mattermost", data=outgoing("alice", "3", "px1", root))
    reply = (await standin.wait_for(3))[2]
    assert reply.body["root_id"] == root and "dietary" in reply.body["message"]
