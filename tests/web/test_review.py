"""Approval review and forms without JavaScript: every error at once in plain words,
limits shown first, yes/no for required booleans, the approved version rendered once
with its changes, and where an inbox search looked."""

from __future__ import annotations

import re

import httpx

from tests.web.conftest import Browser, ask, sign_in
from tests.web.test_ticket_page import api_ticket, field_error
from tickethub.server.runtime import HubRuntime
from tickethub.testing import FakeClock

FORM = {
    "type": "object",
    "required": ["email", "region", "replicas", "confirm"],
    "properties": {
        "email": {"type": "string", "title": "Email", "pattern": "^[^@]+@[^@]+$"},
        "region": {"enum": ["eu", "us"]},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
        "note": {"type": "string", "maxLength": 20},
        "confirm": {"type": "boolean", "title": "Confirm the change"},
    },
}
SCALE = {"type": "object", "required": ["replicas", "region"], "properties": {
    "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
    "region": {"enum": ["eu", "us"]}}}


def summary_items(html: str) -> list[str]:
    box = re.search(r'<div class="error-summary"[^>]*>(.*?)</div>', html, re.S)
    assert box, "no error summary"
    return re.findall(r"<li><a [^>]*>([^<]*)</a></li>", box.group(1))


async def test_every_error_at_once_in_plain_words(
        client: httpx.AsyncClient, agent: dict[str, str], pat: Browser) -> None:
    ticket = await ask(client, agent, title="Details?", response_schema=FORM)
    sent = await pat.post(f"/t/{ticket['id']}/answer", {
        "version": "1", "f.email": "nope", "f.replicas": "50", "f.note": "x" * 30})
    assert sent.status_code == 422
    assert summary_items(sent.text) == [
        "Email must look like name@example.org.", "Region is required.",
        "Replicas must be from 1 to 10.", "Note must be up to 20 characters.",
        "Confirm the change: choose yes or no.",
    ]
    assert field_error(sent.text, "f-email") == "Email must look like name@example.org."
    assert field_error(sent.text, "f-confirm") == "Confirm the change: choose yes or no."
    assert "does not match" not in sent.text and "is greater than" not in sent.text
    assert (await api_ticket(client, agent, ticket["id"]))["status"] == "open"
    fixed = await pat.post(f"/t/{ticket['id']}/answer", {
        "version": "1", "f.email": "a@b.org", "f.region": "1", "f.replicas": "3",
        "f.confirm": "false"})
    assert fixed.status_code == 303, fixed.text
    data = (await api_ticket(client, agent, ticket["id"]))["answer"]["data"]  # type: ignore[index]
    assert data == {"email": "a@b.org", "region": "us", "replicas": 3, "confirm": False}


async def test_limits_show_before_they_are_broken_and_booleans_are_yes_or_no(
        client: httpx.AsyncClient, agent: dict[str, str], pat: Browser) -> None:
    ticket = await ask(client, agent, title="Details?", response_schema=FORM)
    html = (await pat.get(f"/t/{ticket['id']}")).text
    assert '<p class="hint limits" id="f-replicas-limits">Whole number from 1 to 10.</p>' in html
    assert '<p class="hint limits" id="f-note-limits">Up to 20 characters.</p>' in html
    assert '<p class="hint limits" id="f-email-limits">Like name@example.org.</p>' in html
    assert 'aria-describedby="f-replicas-error f-replicas-limits"' in html
    confirm = re.search(r'<fieldset class="field yesno".*?</fieldset>', html, re.S)
    assert confirm and confirm.group(0).count('type="radio"') == 2
    assert "checked" not in confirm.group(0) and 'type="checkbox"' not in confirm.group(0)


async def test_approve_with_changes_shows_the_edited_version_once(
        client: httpx.AsyncClient, agent: dict[str, str], pat: Browser) -> None:
    ticket = await ask(client, agent, kind="approval", title="Scale web?",
                       response_schema=SCALE, proposal={"replicas": 4, "region": "eu"})
    tid = ticket["id"]
    page = (await pat.get(f"/t/{tid}")).text
    assert 'id="decision-bar"' in page and "Approve with changes" in page
    assert f'formaction="/t/{tid}/deny"' in page
    # "Approve" keeps the proposal; with changed values it asks which one was meant.
    mixed = await pat.post(f"/t/{tid}/approve", {"version": "1", "edit": "0",
                                                 "f.replicas": "6", "f.region": "0"})
    assert mixed.status_code == 422 and "You changed replicas 4 → 6." in mixed.text
    assert (await api_ticket(client, agent, tid))["status"] == "open"
    done = await pat.post(f"/t/{tid}/approve", {"version": "1", "edit": "1",
                                                "f.replicas": "6", "f.region": "0",
                                                "comment": "peak traffic"})
    assert done.status_code == 303
    html = (await pat.get(done.headers["location"])).text
    assert '<p class="notice" role="alert" id="notice">Approved with changes: replicas 4 → 6.' \
        in html
    assert html.count('class="banner') == 1 and 'class="banner hidden"' in html
    assert "<strong>Approved with changes: replicas 4 → 6.</strong>" in html
    version = re.search(r'<dl class="args version".*?</dl>', html, re.S)
    assert version and "<code>6</code> <span class=\"was\">was <del>4</del></span>" \
        in version.group(0)
    assert '<p class="change-line">approved with changes: replicas 4 → 6</p>' in html
    assert html.count("&#34;replicas&#34;: 6") == 0  # no raw dump of the edited version
    assert 'id="proposal-h"' not in html  # the original is only inside a closed details
    stored = await api_ticket(client, agent, tid)
    assert stored["answer"]["data"] == {"replicas": 6, "region": "eu"}  # type: ignore[index]


async def test_unchanged_approve_with_changes_is_a_plain_approval_and_deny_needs_a_reason(
        client: httpx.AsyncClient, agent: dict[str, str], pat: Browser) -> None:
    first = await ask(client, agent, kind="approval", title="Scale?", response_schema=SCALE,
                      proposal={"replicas": 4, "region": "eu"})
    same = await pat.post(f"/t/{first['id']}/approve", {
        "version": "1", "edit": "1", "f.replicas": "4", "f.region": "0"})
    assert same.status_code == 303
    html = (await pat.get(same.headers["location"])).text
    assert "Approved as proposed." in html
    messages = await client.get(f"/api/v1/tickets/{first['id']}/messages", headers=agent)
    assert messages.json()[-1]["decision"] == "approved"
    second = await ask(client, agent, kind="approval", title="Drop?", response_schema=SCALE,
                       proposal={"replicas": 1, "region": "us"})
    empty = await pat.post(f"/t/{second['id']}/deny", {"version": "1", "comment": "",
                                                       "f.replicas": "99"})
    assert empty.status_code == 422
    assert summary_items(empty.text) == ["Say why you deny it, so the agent can do better."]
    denied = await pat.post(f"/t/{second['id']}/deny", {"version": "1", "comment": "no",
                                                        "f.replicas": "99"})
    assert denied.status_code == 303
    assert (await api_ticket(client, agent, second["id"]))["status"] == "denied"


async def test_a_search_names_its_view_and_offers_the_others(
        client: httpx.AsyncClient, agent: dict[str, str], responder: dict[str, str],
        pat: Browser) -> None:
    await ask(client, agent, title="Invoice 1042 for pat", assignee="pat")
    other = await ask(client, agent, title="Invoice 1043")
    await ask(client, agent, title="Invoice 1044")
    await client.post(f"/api/v1/tickets/{other['id']}/answer", headers=responder,
                      json={"text": "paid"})
    html = (await pat.get("/", params={"view": "me", "q": "invoice"})).text
    note = re.search(r'<p class="search-scope".*?</p>', html, re.S)
    assert note, html
    text = re.sub(r"<[^>]+>", "", note.group(0))
    assert "in Waiting on me only." in text
    assert "2 in Waiting on my team" in text and "3 in All tickets" in text
    assert 'href="/?q=invoice&amp;view=all"' in note.group(0)
    assert 'class="search-scope"' not in (await pat.get("/")).text


async def test_session_state_for_pages_whose_stream_stopped(pat: Browser) -> None:
    assert (await pat.get("/session")).json() == {"signed_in": True}
    await pat.post("/logout", {})
    gone = await pat.get("/session")
    assert gone.status_code == 200 and gone.json() == {"signed_in": False}


async def test_untouched_fields_the_proposal_left_out_are_not_changes(
        client: httpx.AsyncClient, agent: dict[str, str], pat: Browser) -> None:
    schema = {"type": "object", "required": ["replicas"], "properties": {
        "replicas": {"type": "integer"}, "notify": {"type": "boolean"},
        "zones": {"type": "array", "items": {"enum": ["a", "b"]}},
        "limits": {"type": "object", "properties": {"cpu": {"type": "string"}}}}}
    ticket = await ask(client, agent, kind="approval", title="Scale?", response_schema=schema,
                       proposal={"replicas": 4})
    form = {"version": "1", "f.replicas": "4", "f.limits.cpu": ""}  # as the page sends it
    plain = await pat.post(f"/t/{ticket['id']}/approve", form | {"edit": "0"})
    assert plain.status_code == 303, plain.text
    stored = await api_ticket(client, agent, ticket["id"])
    assert stored["answer"]["data"] == {"replicas": 4}  # type: ignore[index]
    second = await ask(client, agent, kind="approval", title="Again?", response_schema=schema,
                       proposal={"replicas": 4})
    changed = await pat.post(f"/t/{second['id']}/approve",
                             form | {"edit": "1", "f.replicas": "5"})
    assert changed.status_code == 303, changed.text
    html = (await pat.get(changed.headers["location"])).text
    assert "Approved with changes: replicas 4 → 5." in html and "notify" not in html
    stored = await api_ticket(client, agent, second["id"])
    assert stored["answer"]["data"] == {"replicas": 5}  # type: ignore[index]


async def test_asking_whether_signed_in_does_not_keep_a_session_alive(
        clocked: tuple[httpx.AsyncClient, FakeClock, HubRuntime]) -> None:
    client, clock, hub = clocked
    token = (await sign_in(client, "pat")).cookies["th_session"]
    first = hub.sessions.resume(token)
    assert first is not None
    clock.advance(seconds=2000)  # past half the hour: a page view would renew it
    assert (await client.get("/session")).json() == {"signed_in": True}
    clock.advance(seconds=1601)  # past the first expiry: it was not renewed
    assert (await client.get("/session")).json() == {"signed_in": False}
    assert hub.sessions.alive(token) is False and hub.sessions.alive(None) is False
