"""``ask_human``'s ``answer_schema`` through the ``mcp`` SDK's client: a remote ``$ref``
is refused naming the parameter, and nothing is fetched."""

from __future__ import annotations

from bench.bait_server import BaitServer
from live import Hub

from tests.mcp.test_mcp import over_http


async def test_a_remote_ref_in_answer_schema_is_refused_unfetched(hub: Hub) -> None:
    with BaitServer() as bait:
        async with over_http(hub) as client:
            result = await client.call_tool("ask_human", {
                "question": "Budget?", "wait_seconds": 0,
                "answer_schema": {"type": "object",
                                  "properties": {"eur": {"$ref": bait.url()}}}})
            assert result.is_error
            text = result.content[0].text
            assert "validation_failed" in text
            assert "(answer_schema.properties.eur.$ref)" in text
            bad_regex = await client.call_tool("ask_human", {
                "question": "Name?", "wait_seconds": 0,
                "answer_schema": {"type": "string", "pattern": r"(a)\1"}})
            assert bad_regex.is_error and "(answer_schema.pattern)" in bad_regex.content[0].text
    assert bait.requests == []
    async with hub.client(hub.agent) as c:
        assert (await c.get("/api/v1/tickets")).json()["items"] == []
