"""The read policy on the Agent Protocol door: agent B can neither see nor change agent A's
tasks — their steps and artifacts included — and cannot slip a file into A's task as
the agent's output. A ``read:all`` token reads them; a responder reads and adds."""

from __future__ import annotations

from typing import Any

import httpx

from tests.agent_protocol.conftest import AP
from tests.conftest import make_scoped_token, make_token


async def _task(client: httpx.AsyncClient, headers: dict[str, str], **body: Any
                ) -> dict[str, Any]:
    response = await client.post(AP, json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def test_another_agent_cannot_add_artifacts_to_a_task(
        client: httpx.AsyncClient, responder: dict[str, str]) -> None:
    a = await make_token(client, "agent", "agent-a")
    b = await make_token(client, "agent", "agent-b")
    task = await _task(client, a, input="build it")
    step = await client.post(f"{AP}/{task['task_id']}/steps", json={"input": "go"},
                             headers=a)
    assert step.status_code == 200
    url = f"{AP}/{task['task_id']}/artifacts"
    sneaked = await client.post(url, files={"file": ("evil.sh", b"rm -rf /")}, headers=b)
    assert sneaked.status_code == 404  # as for a task that does not exist
    # Reading every task does not make it B's to write to.
    reader = await make_scoped_token(client, "agent", "agent-reader", ["read:all"])
    refused = await client.post(url, files={"file": ("evil.sh", b"x")}, headers=reader)
    assert refused.status_code == 403
    assert refused.json()["code"] == "forbidden"
    # The client itself and a responder may.
    mine = await client.post(url, files={"file": ("spec.md", b"spec")}, headers=a)
    assert mine.status_code == 200 and mine.json()["agent_created"] is False
    output = await client.post(url, files={"file": ("out.txt", b"done")}, headers=responder)
    assert output.status_code == 200 and output.json()["agent_created"] is True
    listed = (await client.get(url, headers=a)).json()["artifacts"]
    assert [x["file_name"] for x in listed] == ["spec.md", "out.txt"]
    # The step's output is the responder's file, never B's.
    got = (await client.get(f"{AP}/{task['task_id']}/steps/{step.json()['step_id']}",
                            headers=a)).json()
    assert [x["file_name"] for x in got.get("artifacts", [])] in ([], ["out.txt"])


async def test_another_agent_does_not_see_a_task_its_steps_or_artifacts(
        client: httpx.AsyncClient, responder: dict[str, str]) -> None:
    a = await make_token(client, "agent", "agent-a")
    b = await make_token(client, "agent", "agent-b")
    task = await _task(client, a, input="A's task", additional_input={"app_id": "x"})
    theirs = await _task(client, b, input="B's task", additional_input={"app_id": "x"})
    step = (await client.post(f"{AP}/{task['task_id']}/steps", json={"input": "s"},
                              headers=a)).json()
    artifact = (await client.post(f"{AP}/{task['task_id']}/artifacts",
                                  files={"file": ("a.txt", b"a")}, headers=a)).json()
    tid = task["task_id"]
    for path in (f"/{tid}", f"/{tid}/steps", f"/{tid}/steps/{step['step_id']}",
                 f"/{tid}/steps/stream", f"/{tid}/artifacts",
                 f"/{tid}/artifacts/{artifact['artifact_id']}"):
        response = await client.get(AP + path, headers=b)
        assert response.status_code == 404, (path, response.text)
    hidden = await client.post(f"{AP}/{tid}/steps", json={"input": "x"}, headers=b)
    assert hidden.status_code == 404

    def ids(response: httpx.Response) -> list[str]:
        assert response.status_code == 200, response.text
        return [t["task_id"] for t in response.json()["tasks"]]

    assert ids(await client.get(AP, headers=b)) == [theirs["task_id"]]
    assert ids(await client.get(AP, params={"app_id": "x"}, headers=b)) == [theirs["task_id"]]
    page = (await client.get(AP, headers=b)).json()["pagination"]
    assert page["total_items"] == 1  # the total does not count A's tasks either
    assert ids(await client.get(AP, headers=a)) == [tid]
    reader = await make_scoped_token(client, "agent", "agent-reader", ["read:all"])
    for headers in (reader, responder):
        assert ids(await client.get(AP, headers=headers)) == [tid, theirs["task_id"]]
        got = await client.get(f"{AP}/{tid}/artifacts/{artifact['artifact_id']}",
                               headers=headers)
        assert got.status_code == 200 and got.content == b"a"


async def test_a_step_on_a_task_one_may_not_read_is_an_unknown_task(
        client: httpx.AsyncClient) -> None:
    """``POST .../steps`` with a JSON body: the same 404 as for a task that is not there."""
    a = await make_token(client, "agent", "agent-a")
    b = await make_token(client, "agent", "agent-b")
    task = await _task(client, a, input="t")
    response = await client.post(f"{AP}/{task['task_id']}/steps", content=b'{"input":"x"}',
                                 headers={**b, "content-type": "application/json"})
    assert response.status_code == 404
    unknown = await client.post(f"{AP}/nope/steps", content=b'{"input":"x"}',
                                headers={**b, "content-type": "application/json"})
    assert response.json()["message"].replace(task["task_id"], "N") == \
        unknown.json()["message"].replace("nope", "N")
