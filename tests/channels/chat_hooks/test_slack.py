"""``POST /hooks/slack`` with Slack's documented Events API payloads, beyond the chat
transport contract (``tests/channels/test_chat_transport_contract.py``, which holds
threads, retries, forgeries, bystanders, restarts and the bot's own posts): the
``url_verification`` challenge, problems naming the header or field, stale timestamps,
edits and other events, an unconfigured door, and private replies."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
from bench.chat_standin import StandIn

from tests.channels.chat_hooks.conftest import stored
from tests.channels.chat_hooks.payloads.slack import ALICE, BOT_USER, CHANNEL, event, signed
from tests.conftest import ADMIN_TOKEN
from tickethub.api.app import create_app
from tickethub.conversations.model import Reply, ThreadRef
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings


async def post(client: httpx.AsyncClient, payload: dict[str, Any],
               **headers: str) -> httpx.Response:
    body = json.dumps(payload).encode()
    return await client.post("/hooks/slack", content=body,
                             headers={**signed(body), **headers})


async def test_url_verification_is_answered_with_the_challenge(
        client: httpx.AsyncClient) -> None:
    challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    r = await post(client, {"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl", "challenge": challenge,
                            "type": "url_verification"})
    assert r.status_code == 200
    assert r.json() == {"challenge": challenge}


async def test_a_forged_signature_is_401_and_nothing_is_queued(
        client: httpx.AsyncClient, runtime: HubRuntime, standin: StandIn) -> None:
    body = json.dumps(event(ALICE, f"<@{BOT_USER}> foodselection", "1.000001")).encode()
    r = await client.post("/hooks/slack", content=body,
                          headers=signed(body, secret="not-the-secret"))
    assert r.status_code == 401
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["field"] == "X-Slack-Signature"
    r = await client.post("/hooks/slack", content=body,
                          headers={"X-Slack-Request-Timestamp": str(int(time.time()))})
    assert r.status_code == 401
    assert r.json()["field"] == "X-Slack-Signature"
    assert stored(runtime, "slack") == []


async def test_a_stale_timestamp_is_refused_as_a_replay(
        client: httpx.AsyncClient, runtime: HubRuntime) -> None:
    body = json.dumps(event(ALICE, "hello", "1.000002")).encode()
    old = int(time.time()) - 301  # signed correctly, but more than 5 minutes ago
    r = await client.post("/hooks/slack", content=body, headers=signed(body, at=old))
    assert r.status_code == 401
    assert r.json()["field"] == "X-Slack-Request-Timestamp"
    r = await client.post("/hooks/slack", content=body,
                          headers={**signed(body), "X-Slack-Request-Timestamp": "soon"})
    assert r.json()["field"] == "X-Slack-Request-Timestamp"
    assert stored(runtime, "slack") == []


async def test_bad_payloads_name_the_field(client: httpx.AsyncClient) -> None:
    body = b"{not json"
    r = await client.post("/hooks/slack", content=body, headers=signed(body))
    assert r.status_code == 400
    assert r.json()["field"] == "body"
    payload = event(ALICE, "hi", "1.000003")
    del payload["event"]["user"]
    r = await post(client, payload)
    assert r.status_code == 422
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["field"] == "event.user"


async def test_bots_edits_and_other_events_are_not_queued(
        client: httpx.AsyncClient, runtime: HubRuntime) -> None:
    own = event(BOT_USER, "Which dish?", "1.000004", bot_id="B0BOT00001")
    edited = event(ALICE, "x", "1.000005", subtype="message_changed")
    for payload in (own, edited):
        r = await post(client, payload)
        assert r.status_code == 200
        assert r.json()["queued"] is False
    r = await post(client, {"type": "app_rate_limited", "team_id": "T0TEAM0001"})
    assert r.status_code == 200
    assert stored(runtime, "slack") == []


async def test_the_door_is_404_when_slack_is_not_configured(
        tmp_path: Any, database_url: str) -> None:
    hub = HubRuntime(Settings(data_dir=tmp_path / "off", database_url=database_url,
                              admin_token=ADMIN_TOKEN))
    try:
        async with hub.running(), httpx.AsyncClient(
                transport=httpx.ASGITransport(app=create_app(hub)),
                base_url="http://hub") as c:
            r = await c.post("/hooks/slack", content=b"{}")
        assert r.status_code == 404
        assert r.json()["field"] == "slack_signing_secret"
    finally:
        hub.close()


async def test_an_oversize_body_is_refused(client: httpx.AsyncClient,
                                           runtime: HubRuntime) -> None:
    body = b" " * (runtime.settings.max_body_bytes + 1)
    r = await client.post("/hooks/slack", content=body, headers=signed(body))
    assert r.status_code == 413


async def test_a_private_reply_goes_to_the_mapped_users_dm(
        client: httpx.AsyncClient, runtime: HubRuntime, standin: StandIn) -> None:
    transport = runtime.chat_hooks["slack"]
    sent = await transport.send(Reply(ThreadRef("slack", CHANNEL, "1.0"), "psst",
                                      direct_to="alice"))
    call = (await standin.wait_for(1))[0]
    assert call.body == {"text": "psst", "channel": ALICE}  # chat_actors, reversed
    assert sent.startswith("1700000000.")  # the ts Slack answered
