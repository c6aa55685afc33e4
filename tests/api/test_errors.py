"""Bad input at the native API: each gets a clear problem+json and loses nothing."""

from __future__ import annotations

import pytest

from tests.conftest import bearer

PROBLEM = "application/problem+json"


async def test_missing_and_wrong_tokens_are_401_with_a_challenge(client):
    missing = await client.get("/api/v1/tickets")
    assert missing.status_code == 401
    assert missing.headers["content-type"] == PROBLEM
    assert missing.headers["www-authenticate"] == "Bearer"
    assert missing.json()["code"] == "unauthenticated"
    wrong = await client.get("/api/v1/tickets", headers=bearer("th_nope"))
    assert wrong.status_code == 401 and "unknown" in wrong.json()["detail"]
    basic = await client.get("/api/v1/tickets", headers={"Authorization": "Basic abc"})
    assert basic.status_code == 401


async def test_wrong_role_is_403(client, agent, responder):
    for headers in (agent, responder):
        response = await client.post("/api/v1/tokens", json={"role": "admin", "name": "x"},
                                     headers=headers)
        assert response.status_code == 403 and response.json()["code"] == "forbidden"


async def test_a_revoked_token_stops_working(client, admin):
    made = (await client.post("/api/v1/tokens", json={"role": "agent", "name": "temp"},
                              headers=admin)).json()
    assert (await client.get("/api/v1/me", headers=bearer(made["token"]))).status_code == 200
    listed = (await client.get("/api/v1/tokens", headers=admin)).json()
    assert all("token" not in t or t["token"] is None for t in listed)
    assert (await client.delete(f"/api/v1/tokens/{made['id']}", headers=admin)).status_code == 204
    assert (await client.get("/api/v1/me", headers=bearer(made["token"]))).status_code == 401
    again = await client.delete(f"/api/v1/tokens/{made['id']}", headers=admin)
    assert again.status_code == 404


async def test_a_name_cannot_change_role(client, admin):
    await client.post("/api/v1/tokens", json={"role": "agent", "name": "bot"}, headers=admin)
    response = await client.post("/api/v1/tokens", json={"role": "admin", "name": "bot"},
                                 headers=admin)
    assert response.status_code == 409 and response.json()["field"] == "role"


async def test_unknown_ticket_is_404_everywhere(client, agent, responder):
    for method, path, body in [
        ("GET", "/api/v1/tickets/424242", None),
        ("GET", "/api/v1/tickets/424242/wait?timeout=0", None),
        ("GET", "/api/v1/tickets/424242/tree", None),
        ("GET", "/api/v1/tickets/424242/messages", None),
        ("POST", "/api/v1/tickets/424242/messages", {"body": "hi"}),
        ("POST", "/api/v1/tickets/424242/answer", {"text": "hi"}),
        ("POST", "/api/v1/tickets/424242/transition", {"to": "done"}),
    ]:
        response = await client.request(method, path, json=body, headers=responder)
        assert response.status_code == 404, path
        assert response.headers["content-type"] == PROBLEM
        assert response.json()["code"] == "not_found"


async def test_malformed_json_is_400_and_stores_nothing(client, agent):
    response = await client.post("/api/v1/tickets", content=b'{"title": "x",',
                                 headers={**agent, "Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["code"] == "malformed_json"
    assert (await client.get("/api/v1/tickets", headers=agent)).json()["items"] == []


@pytest.mark.parametrize(("body", "field"), [
    ({"title": 5}, "title"),
    ({"title": ""}, "title"),
    ({"title": "x", "kind": "poem"}, "kind"),
    ({"title": "x", "labels": "ops"}, "labels"),
    ({"title": "x", "due_at": "tomorrow"}, "due_at"),
    ({"title": "x", "due_at": "2030-01-01T00:00:00"}, "due_at"),
    ({"title": "x", "due_at": "2001-01-01T00:00:00Z"}, "due_at"),
    ({"title": "x", "parent_id": "abc"}, "parent_id"),
    ({"title": "x", "colour": "red"}, "colour"),
    ({}, "title"),
])
async def test_wrong_types_are_422_naming_the_field(client, agent, body, field):
    response = await client.post("/api/v1/tickets", json=body, headers=agent)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == PROBLEM
    assert response.json()["field"] == field


async def test_oversize_body_is_413(client, agent, runtime):
    big = "x" * (runtime.settings.max_body_bytes + 10)
    response = await client.post("/api/v1/tickets", json={"title": "big", "body": big},
                                 headers=agent)
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"
    assert (await client.get("/api/v1/tickets", headers=agent)).json()["items"] == []


async def test_oversize_chunked_body_without_length_is_413(client, agent, runtime):
    limit = runtime.settings.max_body_bytes

    async def chunks():
        for _ in range(limit // 65536 + 2):
            yield b"x" * 65536

    response = await client.post("/api/v1/tickets", content=chunks(),
                                 headers={**agent, "Content-Type": "application/json"})
    assert response.status_code == 413


async def test_wait_timeout_out_of_range_is_422(client, agent):
    response = await client.get("/api/v1/tickets/1/wait?timeout=61", headers=agent)
    assert response.status_code == 422 and response.json()["field"] == "timeout"


async def test_unknown_route_is_a_problem_too(client):
    response = await client.get("/api/v1/nothing-here")
    assert response.status_code == 404
    assert response.headers["content-type"] == PROBLEM


async def test_bad_cursor_and_ref_are_422(client, agent):
    assert (await client.get("/api/v1/tickets?cursor=zz", headers=agent)).json()["field"] == \
        "cursor"
    assert (await client.get("/api/v1/tickets?ref=nope", headers=agent)).json()["field"] == "ref"
