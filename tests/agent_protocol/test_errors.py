"""Every bad input gets a clear 4xx in the Agent Protocol's error shape, naming the
field; the native API keeps its problem+json."""

from __future__ import annotations

import httpx

from tests.agent_protocol.conftest import AP, create_task


async def test_unknown_task_is_404_with_a_message(client: httpx.AsyncClient) -> None:
    for path in ("/nope", "/nope/steps", "/nope/steps/x", "/nope/artifacts"):
        response = await client.get(AP + path)
        assert response.status_code == 404
        assert response.headers["content-type"] == "application/json"
        assert response.json()["message"] == "task nope does not exist"


async def test_unknown_step_id_is_404(client: httpx.AsyncClient) -> None:
    task = await create_task(client, input="t")
    response = await client.get(f"{AP}/{task['task_id']}/steps/nope")
    assert response.status_code == 404
    assert response.json() == {"message": f"task {task['task_id']} has no step nope",
                               "code": "not_found", "field": "step_id"}


async def test_posting_a_step_to_an_unknown_task_is_404(client: httpx.AsyncClient) -> None:
    response = await client.post(f"{AP}/nope/steps", json={"input": "x"})
    assert response.status_code == 404


async def test_malformed_json_is_422(client: httpx.AsyncClient) -> None:
    for body in (b"{bad json", b"[1, 2", b"\xff\xfe"):
        response = await client.post(AP, content=body,
                                     headers={"content-type": "application/json"})
        assert response.status_code == 422
        assert response.json()["code"] == "malformed_json"
        assert response.json()["field"] == "body"


WRONG_TYPES: list[tuple[dict[str, object], str]] = [
    ({"input": 3}, "input"),
    ({"input": ["a"]}, "input"),
    ({"additional_input": "x"}, "additional_input"),
    ({"additional_input": [1]}, "additional_input"),
    ({"input": "x" * 200_001}, "input"),
]


async def test_wrong_types_are_422_naming_the_field(client: httpx.AsyncClient) -> None:
    task = await create_task(client, input="t")
    for body, field in WRONG_TYPES:
        for url in (AP, f"{AP}/{task['task_id']}/steps"):
            response = await client.post(url, json=body)
            assert response.status_code == 422, (url, field)
            assert response.json()["field"] == field
            assert response.json()["message"].startswith(field)
    steps = (await client.get(f"{AP}/{task['task_id']}/steps")).json()
    assert steps["steps"] == []


async def test_a_non_object_body_is_422(client: httpx.AsyncClient) -> None:
    response = await client.post(AP, json=[1, 2])
    assert response.status_code == 422


BAD_PAGING: list[dict[str, object]] = [
    {"page_size": 0}, {"page_size": -1}, {"current_page": 0}, {"current_page": -3},
    {"page_size": "ten"}, {"current_page": "1.5"}, {"page_size": 1001},
    {"current_page": 2**31},
]


async def test_paging_values_out_of_range_are_422(client: httpx.AsyncClient) -> None:
    task = await create_task(client, input="t")
    for params in BAD_PAGING:
        for url in (AP, f"{AP}/{task['task_id']}/steps", f"{AP}/{task['task_id']}/artifacts"):
            response = await client.get(url, params=params)
            assert response.status_code == 422, (url, params)
            assert response.json()["field"] == next(iter(params))


async def test_bad_extension_values_are_422(client: httpx.AsyncClient) -> None:
    response = await client.get(AP, params={"include": "everything"})
    assert response.status_code == 422 and response.json()["field"] == "include"
    response = await client.get(AP, params={"status": "happy"})
    assert response.status_code == 422 and response.json()["field"].startswith("status")


async def test_an_oversize_json_body_is_413(client: httpx.AsyncClient) -> None:
    response = await client.post(AP, content=b'{"input": "' + b"x" * 2_000_000 + b'"}',
                                 headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"


async def test_the_native_api_keeps_problem_json(client: httpx.AsyncClient,
                                                 admin: dict[str, str]) -> None:
    response = await client.get("/api/v1/tickets/999", headers=admin)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    response = await client.post("/api/v1/tickets", content=b"{", headers=admin | {
        "content-type": "application/json"})
    assert response.status_code == 400
