"""Artifacts: stored durably (row + file under the data dir), listed with the spec's
pagination, downloaded as a stream; unsafe paths and oversize files are refused."""

from __future__ import annotations

import httpx

from tests.agent_protocol.conftest import AP, MAX_ARTIFACT, create_task, ticket_of
from tests.conftest import make_token
from tickethub.server.runtime import HubRuntime


async def test_upload_list_and_download_round_trip(
    client: httpx.AsyncClient, runtime: HubRuntime
) -> None:
    task = await create_task(client, input="t")
    content = bytes(range(256)) * 100
    up = await client.post(f"{AP}/{task['task_id']}/artifacts",
                           files={"file": ("data.bin", content)},
                           data={"relative_path": "./out//python/"})
    assert up.status_code == 200, up.text
    artifact = up.json()
    assert artifact["file_name"] == "data.bin"
    assert artifact["agent_created"] is False
    assert artifact["relative_path"] == "out/python"
    stored = runtime.settings.data_dir / "ap-artifacts" / task["task_id"] / artifact["artifact_id"]
    assert stored.read_bytes() == content

    down = await client.get(f"{AP}/{task['task_id']}/artifacts/{artifact['artifact_id']}")
    assert down.status_code == 200
    assert down.headers["content-type"] == "application/octet-stream"
    assert 'filename="data.bin"' in down.headers["content-disposition"]
    assert down.content == content

    task_now = (await client.get(f"{AP}/{task['task_id']}")).json()
    assert task_now["artifacts"] == [artifact]


async def test_artifact_list_is_paginated_as_specified(client: httpx.AsyncClient) -> None:
    task = await create_task(client, input="t")
    ids = []
    for i in range(3):
        up = await client.post(f"{AP}/{task['task_id']}/artifacts",
                               files={"file": (f"f{i}.txt", b"x")})
        ids.append(up.json()["artifact_id"])
    page = (await client.get(f"{AP}/{task['task_id']}/artifacts",
                             params={"page_size": 2})).json()
    assert [a["artifact_id"] for a in page["artifacts"]] == ids[:2]
    assert page["pagination"] == {"total_items": 3, "total_pages": 2, "current_page": 1,
                                  "page_size": 2}


async def test_a_responders_file_is_the_agents_and_shows_in_the_step(
    client: httpx.AsyncClient, responder: dict[str, str]
) -> None:
    task = await create_task(client, input="t")
    step = (await client.post(f"{AP}/{task['task_id']}/steps", json={"input": "a"})).json()
    up = await client.post(f"{AP}/{task['task_id']}/artifacts", headers=responder,
                           files={"file": ("output.txt", b"Washington")})
    assert up.json()["agent_created"] is True
    ticket = await ticket_of(client, task["task_id"], responder)
    await client.post(f"/api/v1/tickets/{ticket['id']}/answer", json={"text": "written"},
                      headers=responder)
    got = (await client.get(f"{AP}/{task['task_id']}/steps/{step['step_id']}")).json()
    assert got["is_last"] is True
    assert [a["file_name"] for a in got["artifacts"]] == ["output.txt"]


async def test_path_traversal_is_refused_and_nothing_is_written(
    client: httpx.AsyncClient, runtime: HubRuntime
) -> None:
    task = await create_task(client, input="t")
    for bad in ("../escape", "a/../../b", "/etc", "..", "C:/x", "a\\..\\b", "~/x"):
        response = await client.post(f"{AP}/{task['task_id']}/artifacts",
                                     files={"file": ("x.txt", b"x")},
                                     data={"relative_path": bad})
        assert response.status_code == 422, bad
        assert response.json()["field"] == "relative_path"
    folder = runtime.settings.data_dir / "ap-artifacts"
    assert not folder.exists() or not any(folder.rglob("*"))
    listed = (await client.get(f"{AP}/{task['task_id']}/artifacts")).json()
    assert listed["artifacts"] == []


async def test_a_file_name_with_folders_is_reduced_to_its_own_name(
    client: httpx.AsyncClient,
) -> None:
    task = await create_task(client, input="t")
    up = await client.post(f"{AP}/{task['task_id']}/artifacts",
                           files={"file": ("../../etc/passwd", b"x")})
    assert up.status_code == 200
    assert up.json()["file_name"] == "passwd"


async def test_upload_without_a_file_is_422(client: httpx.AsyncClient) -> None:
    task = await create_task(client, input="t")
    response = await client.post(f"{AP}/{task['task_id']}/artifacts",
                                 data={"relative_path": "a"})
    assert response.status_code == 422
    assert response.json()["field"] == "file"
    not_form = await client.post(f"{AP}/{task['task_id']}/artifacts", json={"file": "x"})
    assert not_form.status_code == 422


async def test_oversize_upload_is_413_and_leaves_nothing(
    client: httpx.AsyncClient, runtime: HubRuntime
) -> None:
    task = await create_task(client, input="t")
    just_over = await client.post(f"{AP}/{task['task_id']}/artifacts",
                                  files={"file": ("big.bin", b"x" * (MAX_ARTIFACT + 1))})
    assert just_over.status_code == 413, just_over.text
    assert just_over.json()["field"] == "file"
    way_over = await client.post(f"{AP}/{task['task_id']}/artifacts",
                                 files={"file": ("huge.bin", b"x" * (MAX_ARTIFACT * 3))})
    assert way_over.status_code == 413
    exact = await client.post(f"{AP}/{task['task_id']}/artifacts",
                              files={"file": ("ok.bin", b"x" * MAX_ARTIFACT)})
    assert exact.status_code == 200
    files = [p for p in (runtime.settings.data_dir / "ap-artifacts").rglob("*") if p.is_file()]
    assert len(files) == 1


async def test_upload_to_an_unknown_task_is_404_before_any_byte_is_stored(
    client: httpx.AsyncClient, runtime: HubRuntime
) -> None:
    response = await client.post(f"{AP}/nope/artifacts", files={"file": ("a", b"x")})
    assert response.status_code == 404
    assert response.json()["message"] == "task nope does not exist"
    assert not (runtime.settings.data_dir / "ap-artifacts").exists()


async def test_unknown_artifact_and_artifact_of_another_task_are_404(
    client: httpx.AsyncClient,
) -> None:
    a = await create_task(client, input="a")
    b = await create_task(client, input="b")
    up = (await client.post(f"{AP}/{a['task_id']}/artifacts",
                            files={"file": ("f", b"x")})).json()
    for url in (f"{AP}/{b['task_id']}/artifacts/{up['artifact_id']}",
                f"{AP}/{a['task_id']}/artifacts/nope", f"{AP}/nope/artifacts/x",
                f"{AP}/nope/artifacts"):
        response = await client.get(url)
        assert response.status_code == 404, url
        assert set(response.json()) >= {"message"}


async def test_agent_token_uploads_count_for_the_right_actor(
    client: httpx.AsyncClient,
) -> None:
    agent = await make_token(client, "agent", "ide-plugin")
    task = (await client.post(AP, json={"input": "t"}, headers=agent)).json()
    up = await client.post(f"{AP}/{task['task_id']}/artifacts", headers=agent,
                           files={"file": ("f", b"x")})
    assert up.json()["agent_created"] is False
