"""Tool ``parameters`` and ``response_format`` schemas through the official ``openai``
SDK: a remote ``$ref`` is refused naming the request's field and nothing is fetched; a
tool's own local ``$ref``\\ s (as pydantic writes them) keep pointing into that tool."""

from __future__ import annotations

import asyncio
import json

import pytest
from bench.bait_server import BaitServer
from helpers import next_ticket, respond
from live import Hub

import openai

ASK = [{"role": "user", "content": "What should I wear in Paris?"}]


def sdk(hub: Hub) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=hub.url + "/v1", api_key=hub.agent, max_retries=0)


def tool(parameters: dict) -> dict:
    return {"type": "function", "function": {"name": "get_weather",
                                             "parameters": parameters}}


async def test_a_remote_ref_in_tool_parameters_is_refused_unfetched(hub: Hub) -> None:
    with BaitServer() as bait:
        with pytest.raises(openai.UnprocessableEntityError) as caught:
            await sdk(hub).chat.completions.create(model="human", messages=ASK, tools=[
                tool({"type": "object", "properties": {"city": {"$ref": bait.url()}}})])
        error = caught.value.body
        assert error["param"] == "tools.0.function.parameters.properties.city.$ref"
        assert "local reference" in error["message"]
        with pytest.raises(openai.UnprocessableEntityError) as caught:
            await sdk(hub).chat.completions.create(
                model="human", messages=ASK, response_format={
                    "type": "json_schema",
                    "json_schema": {"name": "x", "schema": {"$ref": bait.url()}}})
        assert caught.value.body["param"] == "response_format.json_schema.schema.$ref"
    assert bait.requests == []


async def test_a_tools_local_refs_point_into_that_tool(hub: Hub) -> None:
    parameters = {"type": "object", "$defs": {"City": {"type": "string", "minLength": 2}},
                  "properties": {"city": {"$ref": "#/$defs/City"}}, "required": ["city"]}
    call = asyncio.create_task(sdk(hub).chat.completions.create(
        model="human", messages=ASK, tools=[tool(parameters)]))
    ticket = await next_ticket(hub)
    bad = await respond(hub, ticket["id"], "answer", {"data": {"tool_calls": [
        {"name": "get_weather", "arguments": {"city": "P"}}]}})
    assert bad.status_code == 422
    assert bad.json()["field"] == "data.tool_calls.0.arguments.city"
    good = await respond(hub, ticket["id"], "answer", {"data": {"tool_calls": [
        {"name": "get_weather", "arguments": {"city": "Paris"}}]}})
    assert good.status_code == 200, good.text
    completion = await asyncio.wait_for(call, 10)
    [made] = completion.choices[0].message.tool_calls
    assert json.loads(made.function.arguments) == {"city": "Paris"}
