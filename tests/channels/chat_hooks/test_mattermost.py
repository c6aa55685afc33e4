"""``POST /hooks/mattermost`` with Mattermost's outgoing webhook and slash command
payloads (form and JSON), beyond the chat transport contract
(``tests/channels/test_chat_transport_contract.py``): tokens and problems naming the
field, and a slash command opening the thread its conversation lives in."""

from __future__ import annotations

import httpx
import pytest
from bench.chat_standin import StandIn

from tests.channels.chat_hooks.conftest import stored
from tests.channels.chat_hooks.payloads.mattermost import outgoing, slash
from tickethub.channels.chat_hooks import mattermost
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


async def test_posts_are_taken_while_mattermost_cannot_say_who_the_bot_is(
        client: httpx.AsyncClient, runtime: HubRuntime,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The bot's own posts are ignored (the chat transport contract) once Mattermost
    said who the bot is; until it can, a post is taken rather than lost."""
    transport = runtime.chat_hooks["mattermost"]
    monkeypatch.setattr(mattermost, "LOOKUP_RETRY_SECONDS", 0)  # ask again at once
    monkeypatch.setattr(transport, "_me", transport._me + "/gone")  # 404 at the stand-in
    r = await client.post("/hooks/mattermost", json=outgoing("alice", "hello", "pz1"))
    assert r.status_code == 200
    assert stored(runtime, "mattermost") == ["pz1"]
    monkeypatch.setattr(transport, "_me", transport._me.removesuffix("/gone"))
    own = outgoing("bot", "Which dish?", "pz2", user_id=StandIn.MATTERMOST_BOT)
    r = await client.post("/hooks/mattermost", json=own)
    assert r.status_code == 200
    assert stored(runtime, "mattermost") == ["pz1"]
