"""The web door's errors are the hub's one ``Problem``, only rendered by the page route
(``web/page_route.render_problem``): ``application/problem+json`` (the native API's
body) for a script, the error page made of the problem's title and detail for a client
that asked for HTML. Sign-in stays a redirect for a page."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.web.conftest import Browser, ask
from tickethub.server.runtime import HubRuntime
from tickethub.web.session import COOKIE, CsrfRejected, SignInRequired
from tickethub.web.ticket_view import NoSuchTicket

PROBLEM = "application/problem+json"
JSON = {"Accept": "application/json"}
HTML = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def without_instance(document: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in document.items() if k != "instance"}


async def test_a_triage_action_refused_on_a_field_is_problem_json_naming_it(
        client: httpx.AsyncClient, agent: dict[str, str], pat: Browser) -> None:
    ticket = await ask(client, agent, kind="task", title="Later")
    path = f"/triage/t/{ticket['id']}/snooze"
    bad = await pat.client.post(path, data={"csrf": pat.csrf, "for": "forever"}, headers=JSON)
    assert bad.status_code == 422
    assert bad.headers["content-type"] == PROBLEM
    body = bad.json()
    assert body["code"] == "validation_failed" and body["field"] == "for"
    assert body["detail"].startswith("snooze for one of") and body["instance"] == path


async def test_a_triage_action_gets_the_native_apis_body_for_the_same_error(
        client: httpx.AsyncClient, agent: dict[str, str], pat: Browser) -> None:
    """A stale ``version``: the same problem document through both doors."""
    ticket = await ask(client, agent, kind="task", title="Twice")
    assert (await pat.post(f"/triage/t/{ticket['id']}/done", {})).status_code == 303
    web = await pat.client.post(f"/triage/t/{ticket['id']}/reopen",
                                data={"csrf": pat.csrf, "version": "1"}, headers=JSON)
    api = await client.post(f"/api/v1/tickets/{ticket['id']}/transition", headers=agent,
                            json={"to": "open", "version": 1})
    assert web.status_code == api.status_code == 409
    assert web.headers["content-type"] == api.headers["content-type"] == PROBLEM
    assert web.json()["field"] == "version"
    assert without_instance(web.json()) == without_instance(api.json())


async def test_an_unknown_bulk_action_is_a_problem_naming_the_action(pat: Browser) -> None:
    refused = await pat.client.post("/triage/bulk", headers=JSON, data={
        "csrf": pat.csrf, "action": "explode", "id": ["1"]})
    assert refused.status_code == 422 and refused.headers["content-type"] == PROBLEM
    assert refused.json()["field"] == "action"


async def test_a_bulk_outcome_lists_each_failure_from_its_problem(
        client: httpx.AsyncClient, agent: dict[str, str], pat: Browser) -> None:
    approval = await ask(client, agent, kind="approval", title="Once", proposal={})
    await pat.post(f"/triage/t/{approval['id']}/deny", {"reason": "no"})
    outcome = await pat.client.post("/triage/bulk", headers=JSON, data={
        "csrf": pat.csrf, "action": "approve", "id": [str(approval["id"])]})
    assert outcome.status_code == 200  # the batch ran; that none was done is its outcome
    body = outcome.json()
    assert body["ok"] is False and body["done"] == []
    assert [(f["id"], f["code"]) for f in body["failed"]] == [
        (approval["id"], "illegal_transition")]


@pytest.mark.parametrize("path", ["/triage/pane/99999", "/t/99999", "/tree/99999"])
async def test_an_unknown_ticket_is_the_404_problem(pat: Browser, path: str) -> None:
    problem = NoSuchTicket(99999).problem()
    script = await pat.get(path, headers=JSON)
    assert script.status_code == 404 and script.headers["content-type"] == PROBLEM
    assert script.json() == problem.document(path)
    page = await pat.get(path, headers=HTML)
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert f"<h1>{problem.title}</h1>" in page.text and problem.detail in page.text
    assert "Content-Security-Policy" in page.headers
    assert "Signed in as" in page.text  # the page knows who is looking


async def test_a_form_without_its_token_is_the_403_problem(
        client: httpx.AsyncClient, agent: dict[str, str], pat: Browser) -> None:
    ticket = await ask(client, agent, title="Forged?")
    path = f"/triage/t/{ticket['id']}/done"
    problem = CsrfRejected().problem()
    script = await pat.client.post(path, data={"csrf": "forged"}, headers=JSON)
    assert script.status_code == 403 and script.json() == problem.document(path)
    page = await pat.client.post(path, data={"csrf": "forged"}, headers=HTML)
    assert page.status_code == 403 and problem.detail in page.text


async def test_an_ended_session_is_the_401_problem_for_streams_and_scripts(
        client: httpx.AsyncClient, agent: dict[str, str], runtime: HubRuntime,
        pat: Browser) -> None:
    ticket = await ask(client, agent, title="Still there?")
    runtime.sessions.sign_out(pat.client.cookies[COOKIE])  # ended elsewhere (or expired)
    problem = SignInRequired("/").problem()
    for method, path, headers in [
            ("GET", "/inbox/stream", {"Accept": "text/event-stream"}),
            ("GET", f"/t/{ticket['id']}/stream", {}),
            ("POST", f"/triage/t/{ticket['id']}/done", JSON)]:
        refused = await pat.client.request(method, path, headers=headers,
                                           data={"csrf": pat.csrf} if method == "POST" else None)
        assert refused.status_code == 401, path
        assert refused.headers["content-type"] == PROBLEM, path
        assert refused.json() == problem.document(path), path
        assert "www-authenticate" not in refused.headers  # a cookie, not a Bearer token
    # A page is still sent to sign in, and back.
    page = await pat.get(f"/t/{ticket['id']}", headers=HTML)
    assert page.status_code == 303
    assert page.headers["location"] == f"/login?next=/t/{ticket['id']}"
