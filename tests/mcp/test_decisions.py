"""An MCP question answered with data only (a picked option) stays on the record: a
message with the data and a ``ticket.answered`` event with it, after a reopen too."""

from __future__ import annotations

import asyncio

from live import Hub

from tests.mcp.test_mcp import answer, data, first_open, over_http


async def test_an_option_picked_as_data_is_a_message_and_an_event(hub: Hub) -> None:
    async with over_http(hub) as client:
        call = asyncio.create_task(client.call_tool("ask_human", {
            "question": "Which plan?", "options": ["small", "large"]}))
        ticket = await first_open(hub)
        assert (await answer(hub, ticket["id"], {"data": "small"})).status_code == 200
        assert data(await asyncio.wait_for(call, 15))["answer"]["data"] == "small"
    async with hub.client(hub.agent) as c:
        base = f"/api/v1/tickets/{ticket['id']}"
        assert (await c.post(f"{base}/transition", json={"to": "open"})).status_code == 200
        assert (await answer(hub, ticket["id"], {"data": "large"})).status_code == 200
        messages = (await c.get(f"{base}/messages")).json()
        events = (await c.get("/api/v1/events", params={"ticket_id": ticket["id"]})).json()
    assert [(m["decision"], m["data"]) for m in messages if m["kind"] == "answer"] == [
        ("answered", "small"), ("answered", "large")]
    assert [e["data"]["data"] for e in events["items"] if e["type"] == "ticket.answered"] == [
        "small", "large"]
