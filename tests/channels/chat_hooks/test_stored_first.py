"""A hook stores its message before it answers the platform, so a message it cannot
store is not acknowledged. (That an acknowledged message is handled even when the
process that took it never runs the conversations is promise 5 of the chat transport
contract, ``tests/channels/test_chat_transport_contract.py``.)"""

from __future__ import annotations

import json

import httpx

from tests.channels.chat_hooks.payloads.slack import ALICE, event, signed
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
