"""The MCP server through the ``mcp`` SDK's own client: streamable HTTP at ``/mcp`` and
stdio (``tickethub mcp`` as a subprocess against a live hub)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from live import Hub
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from tests.conftest import LIVE_TIMEOUT

TOOLS = {"ask_human", "await_answer", "list_my_tickets", "post_update"}


@asynccontextmanager
async def over_http(hub: Hub, token: str | None = None) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token or hub.agent}"},
                              timeout=httpx2.Timeout(30, read=70))
    async with http, Client(streamable_http_client(hub.url + "/mcp", http_client=http)) as c:
        yield c


@asynccontextmanager
async def over_stdio(hub: Hub) -> AsyncIterator[Client]:
    command = Path(sys.executable).parent / "tickethub"
    params = StdioServerParameters(
        command=str(command), args=["mcp"],
        env={**os.environ, "TICKETHUB_URL": hub.url, "TICKETHUB_TOKEN": hub.agent})
    async with Client(params) as c:
        yield c


async def answer(hub: Hub, ticket_id: int, body: dict[str, Any], action: str = "answer"
                 ) -> httpx.Response:
    async with hub.client(hub.responder) as c:
        return await c.post(f"/api/v1/tickets/{ticket_id}/{action}", json=body)


async def first_open(hub: Hub) -> dict[str, Any]:
    async with hub.client(hub.responder) as c:
        for _ in range(500):
            items = (await c.get("/api/v1/tickets", params={"status": "open"})).json()["items"]
            if items:
                return dict(items[0])
            await asyncio.sleep(0.02)
    raise AssertionError("no ticket appeared")


def data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return dict(result.structured_content)


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_ask_then_await_the_answer(hub: Hub, transport: str) -> None:
    connect = over_http if transport == "http" else over_stdio
    async with connect(hub) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        asked = data(await client.call_tool("ask_human", {
            "question": "Ship release 1.4?", "details": "All checks are green.",
            "options": ["yes", "no"], "wait_seconds": 0}))
        assert asked["waiting"] is True and asked["status"] == "open"
        ticket_id = asked["ticket_id"]
        waiting = data(await client.call_tool("await_answer",
                                              {"ticket_id": ticket_id, "timeout": 0.2}))
        assert waiting["waiting"] is True
        bad = await answer(hub, ticket_id, {"data": "maybe"})
        assert bad.status_code == 422  # not one of the options
        call = asyncio.create_task(client.call_tool("await_answer",
                                                    {"ticket_id": ticket_id, "timeout": 20}))
        await asyncio.sleep(0.3)
        assert (await answer(hub, ticket_id, {"data": "yes", "text": "go"})).status_code == 200
        done = data(await asyncio.wait_for(call, 15))
        assert done["waiting"] is False and done["outcome"] == "answered"
        assert done["answer"] == {"text": "go", "data": "yes", "by": "alice"}
        posted = data(await client.call_tool("post_update",
                                             {"ticket_id": ticket_id, "text": "Shipped."}))
        assert posted["posted"] is True
        mine = data(await client.call_tool("list_my_tickets", {}))
        assert [t["ticket_id"] for t in mine["tickets"]] == [ticket_id]
        assert data(await client.call_tool("list_my_tickets",
                                           {"waiting_only": True}))["tickets"] == []


async def test_ask_human_returns_the_answer_when_it_comes_in_time(hub: Hub) -> None:
    async with over_http(hub) as client:
        call = asyncio.create_task(client.call_tool("ask_human", {
            "question": "Budget for Q3?", "answer_schema": {
                "type": "object", "properties": {"eur": {"type": "integer"}},
                "required": ["eur"]}}))
        ticket = await first_open(hub)
        assert (await answer(hub, ticket["id"], {"data": {"eur": "lots"}})).status_code == 422
        assert (await answer(hub, ticket["id"], {"data": {"eur": 5000}})).status_code == 200
        result = data(await asyncio.wait_for(call, 15))
        assert result["answer"]["data"] == {"eur": 5000}
        assert result["ticket_url"].endswith(f"/api/v1/tickets/{ticket['id']}")


async def test_an_approval_with_a_deadline(hub: Hub) -> None:
    async with over_http(hub) as client:
        call = asyncio.create_task(client.call_tool("ask_human", {
            "question": "Delete the staging DB?", "kind": "approval",
            "proposal": {"db": "staging"}, "deadline_seconds": 600}))
        ticket = await first_open(hub)
        assert ticket["kind"] == "approval" and ticket["due_at"] is not None
        await answer(hub, ticket["id"], {"reason": "not today"}, "deny")
        result = data(await asyncio.wait_for(call, 15))
        assert result["outcome"] == "denied" and result["answer"]["text"] == "not today"


async def test_no_call_waits_longer_than_50_seconds(hub: Hub) -> None:
    async with over_http(hub) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["await_answer"].input_schema["properties"]["timeout"]["maximum"] == 50
        assert tools["ask_human"].input_schema["properties"]["wait_seconds"]["maximum"] == 50
        too_long = await client.call_tool("await_answer", {"ticket_id": 1, "timeout": 55})
        assert too_long.is_error
        both = await client.call_tool("ask_human", {"question": "x", "options": ["a", "b"],
                                                    "answer_schema": {"type": "string"}})
        assert both.is_error and "either options or answer_schema" in both.content[0].text
        missing = await client.call_tool("await_answer", {"ticket_id": 424242, "timeout": 0})
        assert missing.is_error and "not_found" in missing.content[0].text
        empty = await client.call_tool("post_update", {"ticket_id": 1, "text": ""})
        assert empty.is_error


async def test_mcp_over_http_needs_a_token(hub: Hub) -> None:
    async with httpx.AsyncClient(base_url=hub.url, timeout=LIVE_TIMEOUT) as c:
        response = await c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                headers={"Accept": "application/json, text/event-stream"})
        assert response.status_code == 401
        assert response.json()["code"] == "unauthenticated"
        wrong = await c.post("/mcp", json={}, headers={"Authorization": "Bearer th_nope"})
        assert wrong.status_code == 401
