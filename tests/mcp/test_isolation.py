"""The read policy through MCP: an agent's tools never reach another agent's tickets;
``await_answer`` and ``post_update`` on one answer ``not_found`` as for an unknown id."""

from __future__ import annotations

from live import Hub

from tests.mcp.conftest import _token
from tests.mcp.test_mcp import data, over_http


async def test_mcp_tools_do_not_reach_another_agents_ticket(hub: Hub) -> None:
    async with hub.client(hub.agent) as c:
        theirs = (await c.post("/api/v1/tickets", json={"kind": "question",
                                                       "title": "agent-1's secret"})).json()
    other = _token(hub.url, "agent", "agent-2")
    async with over_http(hub, other) as client:
        waited = await client.call_tool("await_answer", {"ticket_id": theirs["id"],
                                                         "timeout": 0})
        assert waited.is_error and "not_found" in waited.content[0].text
        assert "secret" not in waited.content[0].text
        posted = await client.call_tool("post_update", {"ticket_id": theirs["id"],
                                                        "text": "hi"})
        assert posted.is_error and "not_found" in posted.content[0].text
        mine = data(await client.call_tool("list_my_tickets", {}))
        assert mine["tickets"] == []
    async with over_http(hub) as client:  # the owner still reaches it
        own = data(await client.call_tool("await_answer", {"ticket_id": theirs["id"],
                                                           "timeout": 0}))
        assert own["ticket_id"] == theirs["id"]
