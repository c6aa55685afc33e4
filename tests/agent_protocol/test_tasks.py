"""Tasks: create, get, list with pagination and the extension filters."""

from __future__ import annotations

import asyncio

import httpx

from tests.agent_protocol.conftest import AP, create_task, ticket_of


async def test_a_task_is_a_ticket_of_kind_task_with_its_id_in_refs(
    client: httpx.AsyncClient, responder: dict[str, str]
) -> None:
    task = await create_task(client, input="Write 'Washington' to output.txt\nthanks",
                             additional_input={"app_id": "checkout", "nested": {"a": [1, 2]},
                                               "debug": False})
    assert set(task) == {"input", "additional_input", "task_id", "artifacts"}
    assert task["artifacts"] == []
    assert task["additional_input"] == {"app_id": "checkout", "nested": {"a": [1, 2]},
                                        "debug": False}
    ticket = await ticket_of(client, task["task_id"], responder)
    assert ticket["kind"] == "task"
    assert ticket["title"] == "Write 'Washington' to output.txt"
    assert ticket["body"] == "Write 'Washington' to output.txt\nthanks"
    assert ticket["created_by"] == "ap-client"
    assert ticket["refs"]["ap_task_id"] == task["task_id"]
    assert ticket["refs"]["ap_input.app_id"] == "checkout"

    got = await client.get(f"{AP}/{task['task_id']}")
    assert got.status_code == 200
    assert got.json() == task


async def test_input_and_additional_input_are_kept_as_sent_even_when_absent(
    client: httpx.AsyncClient,
) -> None:
    empty = (await client.post(AP)).json()
    assert empty["input"] is None and empty["additional_input"] is None
    again = (await client.get(f"{AP}/{empty['task_id']}")).json()
    assert again == empty
    blank = await create_task(client, input="", additional_input={})
    assert blank["input"] == "" and blank["additional_input"] == {}


async def test_list_is_paged_oldest_first_with_total_pages_rounded_up(
    client: httpx.AsyncClient,
) -> None:
    ids = [(await create_task(client, input=f"task {i}"))["task_id"] for i in range(5)]
    first = (await client.get(AP, params={"page_size": 2})).json()
    assert [t["task_id"] for t in first["tasks"]] == ids[:2]
    assert first["pagination"] == {"total_items": 5, "total_pages": 3, "current_page": 1,
                                   "page_size": 2}
    last = (await client.get(AP, params={"page_size": 2, "current_page": 3})).json()
    assert [t["task_id"] for t in last["tasks"]] == ids[4:]
    beyond = (await client.get(AP, params={"page_size": 2, "current_page": 9})).json()
    assert beyond["tasks"] == [] and beyond["pagination"]["total_items"] == 5
    default = (await client.get(AP)).json()
    assert default["pagination"]["page_size"] == 10 and len(default["tasks"]) == 5


async def test_list_filters_by_additional_input_key_status_and_label(
    client: httpx.AsyncClient, responder: dict[str, str]
) -> None:
    a = await create_task(client, input="a", additional_input={"app_id": "shop", "n": 1})
    b = await create_task(client, input="b", additional_input={"app_id": "blog", "n": 1})
    await create_task(client, input="c")

    def ids(response: httpx.Response) -> list[str]:
        assert response.status_code == 200, response.text
        return [t["task_id"] for t in response.json()["tasks"]]

    assert ids(await client.get(AP, params={"app_id": "shop"})) == [a["task_id"]]
    assert ids(await client.get(AP, params={"n": "1"})) == [a["task_id"], b["task_id"]]
    assert ids(await client.get(AP, params={"app_id": "shop", "n": "2"})) == []

    ticket = await ticket_of(client, b["task_id"], responder)
    labeled = await client.post(f"/api/v1/tickets/{ticket['id']}/labels",
                                json={"add": ["Urgent"]}, headers=responder)
    assert labeled.status_code == 200
    assert ids(await client.get(AP, params={"label": "urgent"})) == [b["task_id"]]
    done = await client.post(f"/api/v1/tickets/{ticket['id']}/transition", json={"to": "done"},
                             headers=responder)
    assert done.status_code == 200
    assert ids(await client.get(AP, params={"status": "done"})) == [b["task_id"]]
    listed = (await client.get(AP, params={"status": "open"})).json()
    assert listed["pagination"]["total_items"] == 2


async def test_include_steps_adds_the_steps(client: httpx.AsyncClient) -> None:
    task = await create_task(client, input="x")
    step = (await client.post(f"{AP}/{task['task_id']}/steps", json={"input": "go"})).json()
    got = (await client.get(f"{AP}/{task['task_id']}", params={"include": "steps"})).json()
    assert [s["step_id"] for s in got["steps"]] == [step["step_id"]]
    listed = (await client.get(AP, params={"include": "steps"})).json()
    assert listed["tasks"][0]["steps"][0]["step_id"] == step["step_id"]
    plain = (await client.get(f"{AP}/{task['task_id']}")).json()
    assert "steps" not in plain


async def test_concurrent_creates_are_committed_together_and_each_answered(
    client: httpx.AsyncClient,
) -> None:
    """Group commit: many creates at once all come back, each with its own task."""
    responses = await asyncio.gather(*(
        client.post(AP, json={"input": f"t{i}", "additional_input": {"i": i}})
        for i in range(40)))
    tasks = [r.json() for r in responses]
    assert all(r.status_code == 200 for r in responses)
    assert [t["input"] for t in tasks] == [f"t{i}" for i in range(40)]
    assert len({t["task_id"] for t in tasks}) == 40
    listed = (await client.get(AP, params={"page_size": 100})).json()
    assert listed["pagination"]["total_items"] == 40
    for i in (0, 17, 39):
        found = (await client.get(AP, params={"i": str(i)})).json()["tasks"]
        assert [t["task_id"] for t in found] == [tasks[i]["task_id"]]
