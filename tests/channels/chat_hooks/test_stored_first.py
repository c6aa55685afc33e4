"""A hook stores its message before it answers the platform: an acknowledged message is
handled even when the process that took it never runs the conversations (another
worker of ``serve --workers N``, or one that died right after answering)."""

from __future__ import annotations

import json

import httpx
from bench.chat_standin import StandIn

from tests.channels.chat_hooks.conftest import stored
from tests.channels.chat_hooks.payloads.slack import ALICE, BOT_USER, event, signed
from tickethub.api.app import create_app
from tickethub.errors import DatabaseUnavailable
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings


async def _post_to(runtime: HubRuntime, payload: dict[str, object]) -> httpx.Response:
    """``POST /hooks/slack`` to ``runtime``'s app without running its loops (no pump)."""
    body = json.dumps(payload).encode()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(runtime)),
                                 base_url="http://hub") as client:
        return await client.post("/hooks/slack", content=body, headers=signed(body))


async def test_a_message_taken_by_a_process_that_then_dies_is_handled_by_the_next(
        settings: Settings, standin: StandIn) -> None:
    first = event(ALICE, f"<@{BOT_USER}> foodselection", "1700000200.000100")
    taker = HubRuntime(settings)
    try:
        answered = await _post_to(taker, first)
        assert answered.status_code == 200 and answered.json()["queued"] is True
        assert stored(taker, "slack") == ["1700000200.000100"]  # before the answer
    finally:
        taker.close()  # it dies without ever running the conversations
    leader = HubRuntime(settings)
    try:
        async with leader.running():
            calls = await standin.wait_for(1)
        assert "Which dish" in calls[0].body["text"]
        assert calls[0].body["thread_ts"] == "1700000200.000100"
        assert len(standin.calls) == 1  # handled once
    finally:
        leader.close()


async def test_a_message_the_database_cannot_take_is_503_so_the_platform_sends_it_again(
        settings: Settings, monkeypatch) -> None:
    runtime = HubRuntime(settings)
    try:
        transport = runtime.chat_hooks["slack"]

        def away(msg: object) -> str | None:
            raise DatabaseUnavailable("connection refused")

        monkeypatch.setattr(transport, "_accept", away)
        answered = await _post_to(runtime, event(ALICE, "hello", "1700000200.000200"))
        assert answered.status_code == 503, answered.text
        assert answered.headers["retry-after"]
        assert answered.json()["code"] == "database_unavailable"
    finally:
        runtime.close()
