"""The examples in docs/openai-and-mcp.md run: the SDK script, the .env and both MCP
client configs, each against a live hub."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path

import httpx2
import pytest
from helpers import next_ticket, respond
from live import Hub
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcp import Client

DOC = Path(__file__).parents[2] / "docs" / "openai-and-mcp.md"
PLACEHOLDER = "th_agent_token_here"

pytestmark = pytest.mark.sqlite_only


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), re.S)


async def run_python(code: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def test_the_sdk_script_runs(hub: Hub) -> None:
    [script] = blocks("python")[:1]
    proc = await run_python(script, {"TICKETHUB_URL": hub.url,
                                     "TICKETHUB_AGENT_TOKEN": hub.agent})
    first = await next_ticket(hub, timeout=90)  # a cold `import openai` is slow on CI
    assert first["labels"] == ["ops"]
    await respond(hub, first["id"], "answer", {"text": "Yes, deploy."})
    second = await next_ticket(hub, after=first["id"], timeout=30)
    assert "create_vm" in second["body"]
    await respond(hub, second["id"], "answer", {"data": {"tool_calls": [
        {"name": "create_vm", "arguments": {"region": "eu-west"}}]}})
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines[0] == "Yes, deploy."
    assert "'outcome': 'answered'" in lines[1]
    assert lines[2] == "create_vm {'region': 'eu-west'}"


@pytest.mark.hub(openai_default_mode="handoff")
async def test_the_dotenv_points_an_unchanged_agent_at_the_hub(hub: Hub) -> None:
    [dotenv] = blocks("dotenv")
    env = {}
    for line in dotenv.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            env[name] = value.replace(PLACEHOLDER, hub.agent).replace(
                "http://127.0.0.1:8080", hub.url)
    agent = ("import os\nfrom openai import OpenAI\n"  # an agent that knows nothing of us
             "r = OpenAI().chat.completions.create(model=os.environ['SMART_LLM'], "
             "messages=[{'role': 'user', 'content': 'Need help with the build'}])\n"
             "print(r.choices[0].message.content)\n")
    assert {"OPENAI_BASE_URL", "OPENAI_API_KEY"} <= set(env)  # they override ours
    proc = await run_python(agent, env)
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode == 0, err.decode()
    command = json.loads(out)
    assert command["command"]["name"] == "request_assistance"
    assert command["command"]["args"]["ticket_url"].startswith(hub.url + "/api/v1/tickets/")


async def test_both_mcp_client_configs_connect(hub: Hub) -> None:
    stdio_config, http_config = (json.loads(b)["mcpServers"]["tickethub"]
                                 for b in blocks("json")[-2:])
    env = {k: v.replace(PLACEHOLDER, hub.agent).replace("http://127.0.0.1:8080", hub.url)
           for k, v in stdio_config["env"].items()}
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    params = StdioServerParameters(command=stdio_config["command"], args=stdio_config["args"],
                                   env={**os.environ, "PATH": path, **env})
    async with Client(params) as client:
        assert "ask_human" in {t.name for t in (await client.list_tools()).tools}
    headers = {k: v.replace(PLACEHOLDER, hub.agent) for k, v in http_config["headers"].items()}
    url = http_config["url"].replace("http://127.0.0.1:8080", hub.url)
    async with (httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(url, http_client=http)) as client):
        result = await client.call_tool("list_my_tickets", {})
        assert result.structured_content == {"tickets": []}
