"""The bad-input matrix: ids, cursors and ``since`` outside what the database holds,
non-ASCII digits, negative numbers and NUL bytes get the same clear 4xx on SQLite and
PostgreSQL at every route that takes them, never a 500."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN
from tests.web.conftest import PASSWORD, sign_in
from tickethub.domain.actors import Role
from tickethub.domain.ids import MAX_ID

PROBLEM = "application/problem+json"

# Past PostgreSQL's INTEGER, past SQLite's INTEGER, a superscript two ('²'.isdigit() is
# true, int('²') raises), an Arabic-Indic three (int() takes it), and negative.
BAD_NUMBERS = [str(2**31), str(2**63), "²", "٣", "-1"]

# (method, path with {x} for the bad number, JSON body, the parameter the 422 names)
ID_ROUTES: list[tuple[str, str, Any, str]] = [
    ("GET", "/api/v1/tickets/{x}", None, "ticket_id"),
    ("GET", "/api/v1/tickets/{x}/wait?timeout=0", None, "ticket_id"),
    ("GET", "/api/v1/tickets/{x}/tree", None, "ticket_id"),
    ("GET", "/api/v1/tickets/{x}/messages", None, "ticket_id"),
    ("POST", "/api/v1/tickets/{x}/messages", {"body": "hi"}, "ticket_id"),
    ("POST", "/api/v1/tickets/{x}/answer", {"text": "hi"}, "ticket_id"),
    ("POST", "/api/v1/tickets/{x}/approve", {}, "ticket_id"),
    ("POST", "/api/v1/tickets/{x}/deny", {"reason": "no"}, "ticket_id"),
    ("POST", "/api/v1/tickets/{x}/transition", {"to": "done"}, "ticket_id"),
    ("POST", "/api/v1/tickets/{x}/assign", {"assignee": None}, "ticket_id"),
    ("POST", "/api/v1/tickets/{x}/labels", {"add": ["a"]}, "ticket_id"),
    ("DELETE", "/api/v1/tokens/{x}", None, "token_id"),
    ("DELETE", "/api/v1/webhooks/{x}", None, "webhook_id"),
    ("GET", "/api/v1/tickets?cursor={x}", None, "cursor"),
    ("GET", "/api/v1/tickets?parent_id={x}", None, "parent_id"),
    ("GET", "/api/v1/events?since={x}", None, "since"),
    ("GET", "/api/v1/events?ticket_id={x}", None, "ticket_id"),
    ("GET", "/api/v1/events?subtree={x}", None, "subtree"),
    ("GET", "/api/v1/events/stream?since={x}", None, "since"),
    ("GET", "/api/v1/events/stream?ticket_id={x}", None, "ticket_id"),
    ("GET", "/api/v1/events/stream?subtree={x}", None, "subtree"),
]


@pytest.fixture
async def signed_in(client: httpx.AsyncClient, runtime) -> httpx.AsyncClient:
    runtime.sessions.set_password("pat", PASSWORD, Role.RESPONDER)
    assert (await sign_in(client, "pat")).status_code == 303
    return client


@pytest.mark.parametrize("bad", BAD_NUMBERS)
async def test_out_of_range_and_non_ascii_numbers_are_422_naming_the_parameter(
        client, admin, bad):
    for method, path, body, field in ID_ROUTES:
        response = await client.request(method, path.format(x=bad), json=body, headers=admin)
        where = f"{method} {path} with {bad!r}"
        assert response.status_code == 422, (where, response.text)
        assert response.headers["content-type"] == PROBLEM, where
        assert response.json()["field"] == field, (where, response.json())


@pytest.mark.parametrize("bad", [2**31, 2**63, -1, 0])
async def test_out_of_range_ids_in_bodies_are_422(client, agent, bad):
    response = await client.post("/api/v1/tickets", json={"title": "t", "parent_id": bad},
                                 headers=agent)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "parent_id"


@pytest.mark.parametrize("bad", ["²", str(2**63), "-1"])
async def test_a_bad_last_event_id_is_422(client, agent, bad):
    response = await client.get("/api/v1/events/stream",
                                headers={**agent, "Last-Event-ID": bad.encode()})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "Last-Event-ID"


async def test_the_largest_id_is_404_when_unknown(client, admin):
    for method, path, body, _ in ID_ROUTES:
        if "{x}?" in path or "?" not in path:
            response = await client.request(method, path.format(x=MAX_ID), json=body,
                                            headers=admin)
            assert response.status_code == 404, (path, response.text)
            assert response.json()["code"] == "not_found"
    listed = await client.get(f"/api/v1/tickets?cursor={MAX_ID}&parent_id={MAX_ID}",
                              headers=admin)
    assert listed.status_code == 200 and listed.json()["items"] == []
    events = await client.get(f"/api/v1/events?since={MAX_ID}&ticket_id={MAX_ID}",
                              headers=admin)
    assert events.status_code == 409 and events.json()["code"] == "cursor_ahead"


@pytest.mark.parametrize("bad", [*BAD_NUMBERS, "abc"])
async def test_web_pages_answer_a_bad_ticket_id_with_an_html_404(signed_in, bad):
    """The 404 page for a browser; a script (no ``text/html`` in its ``Accept``) gets the
    same problem as problem+json."""
    for method, path in [("GET", "/t/{x}"), ("GET", "/tree/{x}"), ("POST", "/t/{x}/answer"),
                         ("POST", "/t/{x}/approve"), ("POST", "/t/{x}/deny")]:
        response = await signed_in.request(method, path.format(x=bad),
                                           headers={"Accept": "text/html"})
        assert response.status_code == 404, (path, bad, response.text)
        assert response.headers["content-type"].startswith("text/html"), path
        assert "There is no ticket" in response.text
        script = await signed_in.request(method, path.format(x=bad))
        assert script.status_code == 404, (path, bad, script.text)
        assert script.headers["content-type"] == PROBLEM, path
        assert script.json()["code"] == "not_found", path


@pytest.mark.parametrize("bad", BAD_NUMBERS)
async def test_web_streams_refuse_a_bad_cursor(signed_in, agent, bad):
    ticket = (await signed_in.post("/api/v1/tickets", json={"title": "t"},
                                   headers=agent)).json()
    response = await signed_in.get(f"/t/{ticket['id']}/stream", params={"since": bad})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "since"


async def test_a_bad_version_in_a_web_form_is_not_a_500(signed_in, agent):
    ticket = (await signed_in.post("/api/v1/tickets", json={"title": "t"},
                                   headers=agent)).json()
    page = await signed_in.get(f"/t/{ticket['id']}")
    csrf = page.text.split('name="csrf" content="')[1].split('"')[0]
    for version in ("²", str(2**63)):
        response = await signed_in.post(f"/t/{ticket['id']}/answer",
                                        data={"csrf": csrf, "text": "ok", "version": version})
        assert response.status_code in (303, 409), (version, response.text)


NUL = "a\x00b"

# (method, path, JSON body, the field the 422 names); {id} is an open ticket's id.
NUL_ROUTES: list[tuple[str, str, Any, str]] = [
    ("POST", "/api/v1/tickets", {"title": NUL}, "title"),
    ("POST", "/api/v1/tickets", {"title": "t", "body": NUL}, "body"),
    ("POST", "/api/v1/tickets", {"title": "t", "labels": [NUL]}, "labels.0"),
    ("POST", "/api/v1/tickets", {"title": "t", "assignee": NUL}, "assignee"),
    ("POST", "/api/v1/tickets/{id}/messages", {"body": NUL}, "body"),
    ("POST", "/api/v1/tickets/{id}/labels", {"add": [NUL]}, "add.0"),
    ("POST", "/api/v1/tickets/{id}/assign", {"assignee": NUL}, "assignee"),
    ("POST", "/api/v1/tickets/{id}/transition", {"to": "done", "reason": NUL}, "reason"),
    ("POST", "/api/v1/tickets/{id}/deny", {"reason": NUL}, "reason"),
    ("POST", "/api/v1/tickets/{id}/answer", {"text": NUL}, "text"),
    ("GET", "/api/v1/tickets?q=a%00b", None, "q"),
    ("GET", "/api/v1/tickets?label=a%00b", None, "label"),
    ("GET", "/api/v1/tickets?assignee=a%00b", None, "assignee"),
    ("GET", "/api/v1/tickets?created_by=a%00b", None, "created_by"),
    ("GET", "/api/v1/tickets?ref=x%3Da%00b", None, "ref"),
    ("POST", "/ap/v1/agent/tasks", {"input": NUL}, "input"),
]


async def test_nul_bytes_are_422_naming_the_field_on_every_database(client, agent, responder):
    ticket = (await client.post("/api/v1/tickets", json={"title": "t"}, headers=agent)).json()
    for method, path, body, field in NUL_ROUTES:
        headers = responder if path.endswith(("/deny", "/answer")) else agent
        response = await client.request(method, path.format(id=ticket["id"]), json=body,
                                        headers=headers)
        assert response.status_code == 422, (path, body, response.text)
        assert response.json()["field"] == field, (path, response.json())
    unchanged = (await client.get(f"/api/v1/tickets/{ticket['id']}", headers=agent)).json()
    assert unchanged["status"] == "open" and unchanged["version"] == 1


async def test_nul_bytes_in_an_agent_protocol_step_are_422(client):
    task = (await client.post("/ap/v1/agent/tasks", json={"input": "x"})).json()
    response = await client.post(f"/ap/v1/agent/tasks/{task['task_id']}/steps",
                                 json={"input": NUL})
    assert response.status_code == 422, response.text
    assert "input" in response.text


async def test_nul_bytes_from_doors_without_a_wire_schema_are_refused_by_the_service(
        runtime, client):
    """Mail, GitHub and MCP call the services directly: the same rule holds there."""
    from tickethub.domain.status import Kind
    from tickethub.domain.tickets import TicketDraft
    from tickethub.errors import ValidationFailed

    actor = runtime.auth.authenticate(ADMIN_TOKEN)
    with pytest.raises(ValidationFailed) as title:
        runtime.tickets.ask(actor, TicketDraft(kind=Kind.QUESTION, title=NUL))
    assert title.value.field == "title"
    ticket, _ = runtime.tickets.ask(actor, TicketDraft(kind=Kind.TASK, title="t"))
    with pytest.raises(ValidationFailed) as body:
        runtime.tickets.post_message(actor, ticket.id, NUL, "email")
    assert body.value.field == "body"
    with pytest.raises(ValidationFailed) as text:
        runtime.tickets.answer(actor, ticket.id, NUL, None, "github")
    assert text.value.field == "text"


async def test_the_inbox_refuses_nul_filters_and_huge_cursors_with_its_own_page(signed_in):
    for query in ("q=a%00b", "label=a%00b", f"cursor={2**63}", "cursor=%C2%B2",
                  f"sort=urgent&cursor={2**63}~-"):
        response = await signed_in.get(f"/?{query}")
        assert response.status_code == 422, (query, response.text[:300])
        assert response.headers["content-type"].startswith("text/html"), query
