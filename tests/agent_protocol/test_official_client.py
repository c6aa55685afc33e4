"""The official ``agent-protocol-client`` (1.1.0, the latest) drives a hub subprocess:
it creates a task and executes steps until ``is_last`` while a person, using the SDK as
a responder, answers each step; then it uploads and downloads an artifact.

That client pins pydantic<2 and urllib3<2, so it gets a venv of its own under the cache
folder (made once with pip) and runs as a subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from bench.hub import HubProcess

from tests.conftest import LIVE_TIMEOUT, require_server
from tickethub.sdk import AsyncHub

CLIENT = "agent-protocol-client==1.1.0"
SCRIPT = Path(__file__).with_name("official_client_script.py")


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tickethub-tests" / "agent-protocol-client-1.1.0"


@pytest.fixture(scope="session")
def client_python() -> Path:
    """The Python of a venv with the official client, made on first use."""
    venv = _cache_dir()
    python = venv / "bin" / "python"
    marker = venv / ".installed"
    if not marker.exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True,
                       capture_output=True, timeout=300)
        install = subprocess.run([str(python), "-m", "pip", "install", "-q", CLIENT],
                                 capture_output=True, text=True, timeout=600)
        require_server(f"pip install {CLIENT}", install.returncode == 0)
        marker.write_text(CLIENT + "\n")
    return python


async def _person(url: str, token: str, ready: asyncio.Event) -> list[str]:
    """A responder: answers each step posted through the door; the third answer
    finishes the task, with a file attached to that last step."""
    answered: list[str] = []
    async with AsyncHub(url, token, via="sdk") as hub:
        since = (await hub.health())["last_seq"]
        ready.set()
        async for event in hub.stream_events(since=since):
            if event.type != "message.posted" or event.data.get("via") != "agent-protocol":
                continue
            message = next(m for m in await hub.messages(event.ticket_id)
                           if m.id == event.data["message_id"])
            answered.append(message.body)
            if len(answered) < 3:
                await hub.post(event.ticket_id, f"did {message.body}")
            else:
                task_id = event.data["ap_task_id"]
                async with httpx.AsyncClient(base_url=url, headers=hub.headers,
                                             timeout=LIVE_TIMEOUT) as http:
                    up = await http.post(f"/ap/v1/agent/tasks/{task_id}/artifacts",
                                         files={"file": ("output.txt", b"Washington")})
                    assert up.status_code == 200, up.text
                await hub.answer(event.ticket_id, "all done")
                return answered
    return answered


@pytest.mark.slow
async def test_the_official_client_runs_a_task_to_completion(
    client_python: Path, tmp_path: Path
) -> None:
    env = {"TICKETHUB_AP_STEP_HOLD_SECONDS": "20", "TICKETHUB_AP_ANONYMOUS": "on"}
    with HubProcess(env=env) as hub:
        ready = asyncio.Event()
        person = asyncio.create_task(_person(hub.url, hub.responder_token, ready))
        await asyncio.wait_for(ready.wait(), 30)
        proc = await asyncio.create_subprocess_exec(
            str(client_python), str(SCRIPT), hub.url, str(tmp_path),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode == 0, err.decode()[-3000:] + hub.log_tail()
        answered = await asyncio.wait_for(person, 10)
    seen = json.loads(out)
    assert answered == ["step 0", "step 1", "step 2"]
    assert [(s["status"], s["output"], s["is_last"]) for s in seen["steps"]] == [
        ("completed", "did step 0", False),
        ("completed", "did step 1", False),
        ("completed", "all done", True),
    ]
    assert seen["steps"][2]["artifacts"] == ["output.txt"]
    assert seen["first_step_again"] == "did step 0"
    assert seen["steps_pagination"] == {"total_items": 3, "total_pages": 2,
                                        "current_page": 1, "page_size": 2}
    assert seen["uploaded"]["file_name"] == "notes.txt"
    assert seen["uploaded"]["relative_path"] == "docs"
    assert seen["uploaded"]["agent_created"] is False
    assert seen["downloaded"] == "Washington\n"
    assert seen["artifact_names"] == ["notes.txt", "output.txt"]
    assert seen["tasks_pagination"]["page_size"] == 1
    assert seen["unknown_task"]["status"] == 404
    assert seen["unknown_task"]["body"]["message"] == "task no-such-task does not exist"
