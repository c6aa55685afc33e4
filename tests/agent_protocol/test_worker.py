"""``serve_tasks``: an agent worker takes AP tasks from a hub subprocess, replies to
steps, asks people child questions and attaches files; steps left waiting before it
started are picked up too."""

from __future__ import annotations

import asyncio
import contextlib

import httpx
import pytest
from bench.hub import HubProcess

from tests.conftest import LIVE_TIMEOUT
from tickethub.sdk import AsyncHub
from tickethub.sdk.tasks import Reply, TaskStep, serve_tasks

AP = "/ap/v1/agent/tasks"


async def handle(step: TaskStep) -> str | Reply | None:
    if step.input == "ask":
        answer = await step.ask("Which color?", "for the task", timeout=30)
        color = answer.answer.text if answer.answer else None
        await step.attach("color.txt", (color or "").encode(), relative_path="out")
        return Reply(f"color is {color}", data={"color": color}, last=True)
    if step.input == "silent":
        return None
    if step.input == "boom":
        raise RuntimeError("handler bug")
    return f"echo: {step.input} (task: {step.task_input})"


async def _answer_child_questions(url: str, token: str) -> None:
    """A person who answers every open child question with 'blue'."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=LIVE_TIMEOUT) as http:
        while True:
            listed = (await http.get("/api/v1/tickets", params={
                "kind": "question", "status": "open"})).json()["items"]
            for ticket in listed:
                if ticket["parent_id"] is not None:
                    await http.post(f"/api/v1/tickets/{ticket['id']}/answer",
                                    json={"text": "blue"})
            await asyncio.sleep(0.05)


@pytest.mark.slow
async def test_a_worker_serves_steps_asks_people_and_attaches_files() -> None:
    env = {"TICKETHUB_AP_STEP_HOLD_SECONDS": "20", "TICKETHUB_AP_ANONYMOUS": "on"}
    with HubProcess(env=env) as hub:
        async with httpx.AsyncClient(base_url=hub.url, timeout=60) as client:
            task = (await client.post(AP, json={"input": "paint"})).json()
            url = f"{AP}/{task['task_id']}/steps"
            early = asyncio.create_task(client.post(url, json={"input": "early"}))
            while not (await client.get(url)).json()["steps"]:
                await asyncio.sleep(0.02)

            ready = asyncio.Event()
            worker = asyncio.create_task(
                serve_tasks(handle, AsyncHub(hub.url, hub.responder_token), ready=ready))
            person = asyncio.create_task(_answer_child_questions(hub.url, hub.admin_token))
            try:
                await asyncio.wait_for(ready.wait(), 30)
                caught_up = (await early).json()
                assert caught_up["status"] == "completed"
                assert caught_up["output"] == "echo: early (task: paint)"

                hello = (await client.post(url, json={"input": "hello"})).json()
                assert (hello["status"], hello["output"], hello["is_last"]) == (
                    "completed", "echo: hello (task: paint)", False)
                assert hello["additional_output"]["replied_by"] == "bench-responder"

                final = (await client.post(url, json={"input": "ask"})).json()
                assert final["status"] == "completed"
                assert final["output"] == "color is blue"
                assert final["is_last"] is True
                assert final["additional_output"]["data"] == {"color": "blue"}
                assert [(a["file_name"], a["relative_path"], a["agent_created"])
                        for a in final["artifacts"]] == [("color.txt", "out", True)]
                artifact = final["artifacts"][0]["artifact_id"]
                content = await client.get(f"{AP}/{task['task_id']}/artifacts/{artifact}")
                assert content.content == b"blue"
                after = await client.post(url, json={"input": "more"})
                assert after.status_code == 409
            finally:
                for job in (worker, person):
                    job.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await job


@pytest.mark.slow
async def test_a_failing_or_silent_handler_leaves_the_step_to_a_person() -> None:
    env = {"TICKETHUB_AP_STEP_HOLD_SECONDS": "1", "TICKETHUB_AP_ANONYMOUS": "on"}
    with HubProcess(env=env) as hub:
        ready = asyncio.Event()
        worker = asyncio.create_task(
            serve_tasks(handle, AsyncHub(hub.url, hub.responder_token), ready=ready))
        try:
            await asyncio.wait_for(ready.wait(), 30)
            async with httpx.AsyncClient(base_url=hub.url, timeout=60) as client:
                task = (await client.post(AP, json={"input": "t"})).json()
                url = f"{AP}/{task['task_id']}/steps"
                for text in ("boom", "silent"):
                    step = (await client.post(url, json={"input": text})).json()
                    assert step["status"] == "running"
                    assert "waiting_for_human" in step["additional_output"]
                ok = (await client.post(url, json={"input": "fine"})).json()
                assert ok["output"] == "echo: fine (task: t)"
        finally:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
