"""The extension stream of a task's steps (Server-Sent Events): every step now, then
each change live, ending once the task is finished."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from bench.hub import HubProcess

from tests.agent_protocol.conftest import AP, create_task, ticket_of
from tests.conftest import LIVE_TIMEOUT


def _events(text: str) -> list[tuple[str, Any]]:
    out = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines()
                      if ": " in line and not line.startswith(":"))
        if "event" in fields:
            out.append((fields["event"], json.loads(fields["data"])))
    return out


async def test_a_finished_tasks_stream_sends_its_steps_and_ends(
    client: httpx.AsyncClient, responder: dict[str, str]
) -> None:
    task = await create_task(client, input="t")
    step = (await client.post(f"{AP}/{task['task_id']}/steps", json={"input": "a"})).json()
    ticket = await ticket_of(client, task["task_id"], responder)
    await client.post(f"/api/v1/tickets/{ticket['id']}/answer", json={"text": "ok"},
                      headers=responder)
    response = await client.get(f"{AP}/{task['task_id']}/steps/stream")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = _events(response.text)
    assert [(name, data.get("step_id"), data.get("status"), data.get("is_last"))
            for name, data in events] == [
        ("step", step["step_id"], "completed", True), ("end", None, None, None)]


async def test_the_stream_of_an_unknown_task_is_404(client: httpx.AsyncClient) -> None:
    response = await client.get(f"{AP}/nope/steps/stream")
    assert response.status_code == 404
    assert response.json()["message"] == "task nope does not exist"


@pytest.mark.slow
async def test_the_stream_follows_steps_live() -> None:
    env = {"TICKETHUB_AP_STEP_HOLD_SECONDS": "0", "TICKETHUB_AP_ANONYMOUS": "on"}
    with HubProcess(env=env) as hub:
        responder = {"Authorization": f"Bearer {hub.responder_token}"}
        async with httpx.AsyncClient(base_url=hub.url, timeout=LIVE_TIMEOUT) as client:
            task = await create_task(client, input="t")
            ticket = await ticket_of(client, task["task_id"], responder)
            seen: list[tuple[str, Any]] = []
            async with client.stream("GET", f"{AP}/{task['task_id']}/steps/stream") as stream:
                lines = stream.aiter_lines()
                block: list[str] = []

                async def next_event() -> tuple[str, Any]:
                    while True:
                        line = await asyncio.wait_for(anext(lines), 10)
                        if line:
                            block.append(line)
                            continue
                        events = _events("\n".join(block))
                        block.clear()
                        if events:
                            seen.append(events[0])
                            return events[0]

                step = (await client.post(f"{AP}/{task['task_id']}/steps",
                                          json={"input": "a"})).json()
                name, data = await next_event()
                assert (name, data["step_id"], data["status"]) == (
                    "step", step["step_id"], "running")
                await client.post(f"/api/v1/tickets/{ticket['id']}/messages",
                                  json={"body": "did a"}, headers=responder)
                name, data = await next_event()
                assert (data["status"], data["output"]) == ("completed", "did a")
                await client.post(f"/api/v1/tickets/{ticket['id']}/transition",
                                  json={"to": "done"}, headers=responder)
                name, data = await next_event()
                assert (data["step_id"], data["is_last"]) == (step["step_id"], True)
                name, _ = await next_event()
                assert name == "end"
