"""The triage view without JavaScript: plain forms and links for every action, each a
service call with its own event; counts, weight, read marks, bulk and saved views."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import httpx

from tests.web.conftest import Browser, ask
from tickethub.server.runtime import HubRuntime


def rows(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'<li class="trow[^"]*" data-id="(\d+)"', html)]


def row_class(html: str, ticket_id: int) -> str:
    found = re.search(rf'<li class="(trow[^"]*)" data-id="{ticket_id}"', html)
    assert found, f"no row {ticket_id}"
    return found.group(1)


def test_weight_blocking_overdue_soon() -> None:
    from tickethub.domain.status import Kind, Status
    from tickethub.domain.tickets import Ticket
    from tickethub.web.weight import weight

    now = datetime(2026, 1, 1, tzinfo=UTC)

    def ticket(kind: Kind, due: timedelta | None = None,
               status: Status = Status.OPEN) -> Ticket:
        return Ticket(1, kind, "t", "", status, "a", now, now,
                      due_at=now + due if due is not None else None)

    assert weight(ticket(Kind.APPROVAL), now) == ["blocking"]
    assert weight(ticket(Kind.QUESTION, timedelta(minutes=-5)), now) == ["overdue", "blocking"]
    assert weight(ticket(Kind.TASK, timedelta(minutes=30)), now) == ["soon"]
    assert weight(ticket(Kind.TASK, timedelta(hours=3)), now) == []
    assert weight(ticket(Kind.INFO), now) == []
    assert weight(ticket(Kind.APPROVAL, status=Status.DEFERRED), now) == []
    assert weight(ticket(Kind.APPROVAL, timedelta(minutes=-5), Status.DONE), now) == []


def pane_id(html: str) -> int | None:
    found = re.search(r'<article class="tpane" id="tpane" data-id="(\d+)"', html)
    return int(found.group(1)) if found else None


async def events_of(client: httpx.AsyncClient, admin: dict[str, str], ticket_id: int
                    ) -> list[str]:
    page = await client.get(f"/api/v1/events?ticket_id={ticket_id}", headers=admin)
    assert page.status_code == 200, page.text
    return [e["type"] + (f":{e['data']['to']}" if "to" in e["data"] else "")
            for e in page.json()["items"]]


async def test_split_pane_weight_counts_and_read_marks(
        client: httpx.AsyncClient, agent: dict[str, str], pat: Browser) -> None:
    now = datetime.now(UTC)
    info = await ask(client, agent, kind="info", title="FYI: deploy went out")
    soon = await ask(client, agent, kind="task", title="Rotate keys",
                     due_at=(now + timedelta(minutes=20)).isoformat())
    late = await ask(client, agent, kind="task", title="Late one",
                     due_at=(now + timedelta(seconds=2)).isoformat())
    approval = await ask(client, agent, kind="approval", title="Deploy v2",
                         proposal={"tool": "deploy", "arguments": {"replicas": 4}})
    await ask(client, agent, title="For sam", assignee="sam")
    page = await pat.get("/triage")
    assert page.status_code == 200
    html = page.text
    assert rows(html) == [approval["id"], late["id"], soon["id"], info["id"]]
    assert pane_id(html) == approval["id"]  # the first row fills the pane
    assert "w-blocking" in row_class(html, approval["id"])
    assert "w-soon" in row_class(html, soon["id"])
    assert "w-" not in row_class(html, info["id"])  # an FYI weighs nothing
    assert 'status-open' not in html.split('id="tlist"')[1].split("</ol>")[0]  # no chip
    assert re.search(r'id="count-team">4<', html) and re.search(r'id="count-all">5<', html)
    assert re.search(r'id="count-me">0<', html)
    # Everything is unread until opened; opening by a link marks it read for pat only.
    assert "unread" in row_class(html, soon["id"])
    opened = await pat.get(f"/triage?open={soon['id']}")
    assert pane_id(opened.text) == soon["id"]
    assert "unread" not in row_class(opened.text, soon["id"])
    assert "unread" in row_class(opened.text, approval["id"])  # shown first, not opened
    # ... and marked unread again by a plain form.
    back = await pat.post("/triage/read", {"id": soon["id"], "read": "0", "back": ""})
    assert back.status_code == 303
    assert "unread" in row_class((await pat.get("/triage")).text, soon["id"])


async def test_counts_are_exact_past_a_thousand(runtime: HubRuntime,
                                                pat: Browser) -> None:
    from tickethub.domain.actors import Actor, Role
    from tickethub.domain.status import Kind
    from tickethub.domain.tickets import TicketDraft

    agent = Actor("bulk-agent", Role.AGENT)
    now = runtime.clock.now()
    with runtime.store.write() as uow:
        uow.actors.add(agent, now)
        for n in range(1203):
            last = uow.tickets.add(TicketDraft(Kind.QUESTION, f"Q {n}"), agent.name, now)
    # Rows written behind the services' back append no event; every real change does,
    # and that is what tells the counts to refresh. One message moves the log.
    runtime.tickets.post_message(agent, last.id, "seeded", "api")
    html = (await pat.get("/triage")).text
    assert re.search(r'id="count-team">1,203<', html)
    assert '<span id="total">1,203</span>' in html
    assert "1000+" not in (await pat.get("/")).text


async def test_every_action_is_a_plain_form(client: httpx.AsyncClient,
                                            agent: dict[str, str], admin: dict[str, str],
                                            pat: Browser) -> None:
    a1 = await ask(client, agent, kind="approval", title="A1", proposal={"x": 1})
    a2 = await ask(client, agent, kind="approval", title="A2", proposal={"x": 2})
    q = await ask(client, agent, title="Q")
    t = await ask(client, agent, kind="task", title="T")
    # approve: redirects to the next ticket, with a notice; the decision is audited.
    r = await pat.post(f"/triage/t/{a1['id']}/approve",
                       {"version": a1["version"], "back": "view=team", "next": a2["id"]})
    assert r.status_code == 303
    assert r.headers["location"] == f"/triage?view=team&done=approve&did={a1['id']}&open={a2['id']}"
    follow = await pat.get(r.headers["location"])
    assert "Approved #" in follow.text and pane_id(follow.text) == a2["id"]
    assert "ticket.answered:approved" in await events_of(client, admin, a1["id"])
    # deny without a reason: the page again, the error next to the reason, nothing sent.
    r = await pat.post(f"/triage/t/{a2['id']}/deny", {"version": a2["version"], "back": ""})
    assert r.status_code == 422 and "Say why" in r.text and 'aria-invalid="true"' in r.text
    r = await pat.post(f"/triage/t/{a2['id']}/deny", {"reason": "too big", "back": ""})
    assert r.status_code == 303
    # comment without resolving: the ticket still waits; the agent gets the message.
    r = await pat.post(f"/triage/t/{q['id']}/comment", {"body": "Which region?", "back": ""})
    assert r.status_code == 303 and f"open={q['id']}" in r.headers["location"]
    got = (await client.get(f"/api/v1/tickets/{q['id']}", headers=agent)).json()
    assert got["status"] == "open"
    msgs = (await client.get(f"/api/v1/tickets/{q['id']}/messages", headers=agent)).json()
    assert [m["body"] for m in msgs] == ["Which region?"]
    # assign (to me), label, snooze, reply, done, cancel, reopen.
    assert (await pat.post(f"/triage/t/{q['id']}/assign", {"assignee": "me"})).status_code == 303
    assert (await pat.post(f"/triage/t/{q['id']}/label",
                           {"add": "urgent, infra"})).status_code == 303
    assert (await pat.post(f"/triage/t/{q['id']}/label",
                           {"remove": "infra"})).status_code == 303
    assert (await pat.post(f"/triage/t/{t['id']}/snooze", {"for": "4h"})).status_code == 303
    got = (await client.get(f"/api/v1/tickets/{q['id']}", headers=agent)).json()
    assert got["assignee"] == "pat" and got["labels"] == ["urgent"]
    snoozed = (await client.get(f"/api/v1/tickets/{t['id']}", headers=agent)).json()
    assert snoozed["status"] == "deferred"
    assert (await pat.post(f"/triage/t/{q['id']}/reply", {"text": "eu-west"})).status_code == 303
    assert (await pat.post(f"/triage/t/{t['id']}/done", {})).status_code == 303
    assert (await pat.post(f"/triage/t/{t['id']}/reopen", {})).status_code == 303
    assert (await pat.post(f"/triage/t/{t['id']}/cancel", {})).status_code == 303
    types = await events_of(client, admin, t["id"])
    assert [x for x in types if x.startswith("ticket.transitioned")] == [
        "ticket.transitioned:deferred", "ticket.transitioned:done",
        "ticket.transitioned:open", "ticket.transitioned:cancelled"]
    got = (await client.get(f"/api/v1/tickets/{q['id']}", headers=agent)).json()
    assert got["status"] == "answered" and got["answer"]["text"] == "eu-west"
    # A stale version is refused (409) and says so; JSON callers get JSON.
    stale = await pat.post(f"/triage/t/{t['id']}/reopen", {"version": 1})
    assert stale.status_code == 409
    js = await pat.client.post(f"/triage/t/{t['id']}/reopen", data={"csrf": pat.csrf},
                               headers={"Accept": "application/json"})
    assert js.status_code == 200 and js.json()["status"] == "open"
    bad = await pat.client.post(f"/triage/t/{t['id']}/snooze",
                                data={"csrf": pat.csrf, "for": "forever"},
                                headers={"Accept": "application/json"})
    assert bad.status_code == 422 and bad.json()["field"] == "for"
    assert (await pat.post(f"/triage/t/{t['id']}/done", {}, csrf=False)).status_code == 403


async def test_bulk_is_one_decision_per_ticket(client: httpx.AsyncClient,
                                               agent: dict[str, str], admin: dict[str, str],
                                               pat: Browser) -> None:
    approvals = [await ask(client, agent, kind="approval", title=f"A{n}", proposal={"n": n})
                 for n in range(3)]
    ids = [a["id"] for a in approvals]
    await pat.post(f"/triage/t/{ids[0]}/deny", {"reason": "no"})
    r = await pat.client.post("/triage/bulk", data={"csrf": pat.csrf, "action": "approve",
                                                    "id": ids, "back": "view=team"})
    # One was already denied: the other two are approved, and the page says which failed.
    assert r.status_code == 200 and "Approved 2 of 3" in r.text and f"#{ids[0]}" in r.text
    for ticket_id in ids[1:]:
        got = (await client.get(f"/api/v1/tickets/{ticket_id}", headers=agent)).json()
        assert got["status"] == "approved" and got["answer"]["by"] == "pat"
        events = await events_of(client, admin, ticket_id)
        assert events.count("ticket.answered:approved") == 1
    tasks = [await ask(client, agent, kind="task", title=f"T{n}") for n in range(2)]
    r = await pat.client.post("/triage/bulk", data={
        "csrf": pat.csrf, "action": "done", "id": [x["id"] for x in tasks]})
    assert r.status_code == 303 and "done=done&n=2" in r.headers["location"]
    assert "Marked done: 2 tickets." in (await pat.get(r.headers["location"])).text


async def test_saved_views_are_per_person(client: httpx.AsyncClient, runtime: HubRuntime,
                                          agent: dict[str, str], pat: Browser) -> None:
    await ask(client, agent, kind="approval", title="Needs a yes", proposal={})
    r = await pat.post("/triage/views", {"name": "Approvals", "back": "kind=approval&view=me"})
    assert r.status_code == 303 and r.headers["location"] == "/triage?kind=approval&view=me"
    html = (await pat.get("/triage")).text
    assert 'href="/triage?kind=approval&amp;view=me">Approvals</a>' in html
    sam = runtime.sessions.set_password("sam", "another long password")
    assert runtime.saved_views.list(sam) == []  # pat's views are pat's
    assert [v.name for v in runtime.saved_views.list(
        runtime.sessions.set_password("pat", "correct horse battery"))] == ["Approvals"]
    bad = await pat.post("/triage/views", {"name": " ", "back": ""})
    assert bad.status_code == 422 and "give the view a name" in bad.text
    await pat.post("/triage/views/delete", {"name": "Approvals"})
    assert "Approvals</a>" not in (await pat.get("/triage")).text


async def test_counts_follow_changes(client: httpx.AsyncClient, agent: dict[str, str],
                                     pat: Browser) -> None:
    first = await ask(client, agent, title="One")
    assert re.search(r'id="count-team">1<', (await pat.get("/triage")).text)
    await ask(client, agent, title="Two")
    assert re.search(r'id="count-team">2<', (await pat.get("/triage")).text)
    await pat.post(f"/triage/t/{first['id']}/done", {})
    html = (await pat.get("/triage")).text
    assert re.search(r'id="count-team">1<', html) and re.search(r'id="count-all">2<', html)


async def test_pane_alone_marks_read_and_keeps_only_filters(
        client: httpx.AsyncClient, agent: dict[str, str], pat: Browser) -> None:
    q = await ask(client, agent, title="Pane me")
    assert "unread" in row_class((await pat.get("/triage")).text, q["id"])
    pane = await pat.get(f"/triage/pane/{q['id']}?back=view%3Dme%26next%3D%2F%2Fevil%26q%3Dx")
    assert pane.status_code == 200 and pane_id(pane.text) == q["id"]
    assert 'name="back" value="view=me&amp;q=x"' in pane.text
    assert "unread" not in row_class((await pat.get("/triage")).text, q["id"])
    assert (await pat.get("/triage/pane/99999")).status_code == 404


async def test_a_read_ticket_turns_unread_when_someone_else_acts_on_it(
        client: httpx.AsyncClient, agent: dict[str, str], responder: dict[str, str],
        pat: Browser) -> None:
    """A mark covers what had happened when it was made: a later message, answer or
    status change by someone else shows the ticket unread again (in the list, for the
    person who marked it); the person's own comment keeps it read; opening it again
    reads it again."""
    message, moved, commented, quiet = [
        (await ask(client, agent, kind="task", title=title))["id"]
        for title in ("New message", "Moved", "Commented by pat", "Quiet")]
    for ticket_id in (message, moved, commented, quiet):
        assert (await pat.get(f"/triage/pane/{ticket_id}")).status_code == 200
    html = (await pat.get("/triage")).text
    assert all("unread" not in row_class(html, i) for i in (message, moved, commented, quiet))

    posted = await client.post(f"/api/v1/tickets/{message}/messages",
                               json={"body": "One more thing"}, headers=agent)
    assert posted.status_code == 201, posted.text
    changed = await client.post(f"/api/v1/tickets/{moved}/transition",
                                json={"to": "in_progress"}, headers=responder)
    assert changed.status_code == 200, changed.text
    mine = await pat.post(f"/triage/t/{commented}/comment", {"body": "On it", "back": ""})
    assert mine.status_code == 303, mine.text

    html = (await pat.get("/triage")).text
    assert "unread" in row_class(html, message)
    assert "unread" in row_class(html, moved)
    assert "unread" not in row_class(html, commented)
    assert "unread" not in row_class(html, quiet)
    # Marked read again (opened, or by the plain form): read until the next activity.
    await pat.get(f"/triage/pane/{message}")
    back = await pat.post("/triage/read", {"id": moved, "read": "1", "back": ""})
    assert back.status_code == 303
    html = (await pat.get("/triage")).text
    assert "unread" not in row_class(html, message) and "unread" not in row_class(html, moved)
    answered = await client.post(f"/api/v1/tickets/{message}/answer",
                                 json={"text": "done"}, headers=responder)
    assert answered.status_code == 200, answered.text
    html = (await pat.get("/triage?view=all")).text
    assert "unread" in row_class(html, message)
