"""The inbox page: views, filters, search, urgency, keyset pages."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.web.conftest import Browser, ask
from tickethub.domain.actors import Actor, Role
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.server.runtime import HubRuntime
from tickethub.services.inbox import InboxQuery


def ids(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'<li class="row[^"]*" data-id="(\d+)"', html)]


async def test_views_show_what_waits_on_me_or_my_team(
        client: httpx.AsyncClient, agent: dict[str, str], responder: dict[str, str],
        pat: Browser) -> None:
    mine = await ask(client, agent, title="For pat", assignee="pat")
    team = await ask(client, agent, title="Anyone")
    other = await ask(client, agent, title="For sam", assignee="sam")
    done = await ask(client, agent, title="Done already")
    await client.post(f"/api/v1/tickets/{done['id']}/answer", headers=responder,
                      json={"text": "ok"})
    default = await pat.get("/")
    assert default.status_code == 200
    assert ids(default.text) == [team["id"], mine["id"]]
    assert ids((await pat.get("/?view=me")).text) == [mine["id"]]
    everything = ids((await pat.get("/?view=all")).text)
    assert everything == [done["id"], other["id"], team["id"], mine["id"]]
    answered = ids((await pat.get("/?view=all&status=answered")).text)
    assert answered == [done["id"]]


async def test_filters_and_search(client: httpx.AsyncClient, agent: dict[str, str],
                                  admin: dict[str, str], pat: Browser) -> None:
    q = await ask(client, agent, title="Pick a colour", labels=["Design"])
    a = await ask(client, agent, kind="approval", title="Send invoice", labels=["billing"])
    other_agent = await ask(client, admin, title="From admin about colour")
    await client.post(f"/api/v1/tickets/{a['id']}/messages", headers=agent,
                      json={"body": "the customer is ACME"})
    assert ids((await pat.get("/?kind=approval")).text) == [a["id"]]
    assert ids((await pat.get("/?label=design")).text) == [q["id"]]
    assert ids((await pat.get("/?agent=agent-1")).text) == [a["id"], q["id"]]
    assert ids((await pat.get("/?q=colour")).text) == [other_agent["id"], q["id"]]
    assert ids((await pat.get("/?q=acme")).text) == [a["id"]]  # found in the thread
    assert ids((await pat.get("/?q=100%25")).text) == []  # LIKE wildcards are literal
    bad = await pat.get("/?kind=banana")
    assert bad.status_code == 422 and "kind: unknown kind" in bad.text
    bad_cursor = await pat.get("/?cursor=zzz")
    assert bad_cursor.status_code == 422 and "cursor:" in bad_cursor.text


async def test_most_urgent_first_with_due_text(client: httpx.AsyncClient,
                                               agent: dict[str, str], pat: Browser) -> None:
    now = datetime.now(UTC)
    later = await ask(client, agent, title="Later", due_at=(now + timedelta(hours=3)).isoformat())
    soon = await ask(client, agent, title="Soon",
                     due_at=(now + timedelta(minutes=12, seconds=20)).isoformat())
    none = await ask(client, agent, title="Whenever")
    page = await pat.get("/?sort=urgent")
    assert ids(page.text) == [soon["id"], later["id"], none["id"]]
    assert ">in 12 min</time>" in page.text and ">in 3 h</time>" in page.text
    assert 'class="due soon"' in page.text


def test_overdue_text() -> None:
    from tickethub.web.render import due_text
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert due_text(now + timedelta(minutes=12), now) == "in 12 min"
    assert due_text(now - timedelta(seconds=30), now) == "overdue"
    assert due_text(now - timedelta(minutes=90), now) == "overdue by 2 h"
    assert due_text(now + timedelta(days=3), now) == "in 3 d"


async def test_keyset_pages_cover_everything_once(client: httpx.AsyncClient,
                                                  agent: dict[str, str],
                                                  runtime: HubRuntime, pat: Browser) -> None:
    now = datetime.now(UTC)
    made = []
    for n in range(23):
        due = (now + timedelta(minutes=1 + n % 5)).isoformat() if n % 3 else None
        made.append((await ask(client, agent, title=f"T{n}", due_at=due))["id"])
    for sort in ("newest", "urgent"):
        seen: list[int] = []
        cursor = None
        while True:
            page = await runtime_page(runtime, sort, cursor)
            seen += [t.id for t in page.items]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert sorted(seen) == sorted(made) and len(seen) == len(set(seen)), sort
    first = await pat.get("/")
    assert len(ids(first.text)) == 23  # one page of 50
    html = (await pat.get("/?sort=urgent")).text
    assert 'rel="next"' not in html


async def runtime_page(runtime: HubRuntime, sort: str, cursor: str | None):  # type: ignore[no-untyped-def]
    from tickethub.services.inbox import Cursor
    query = InboxQuery(me="pat", sort=sort, limit=5,  # type: ignore[arg-type]
                       cursor=Cursor.decode(cursor, sort) if cursor else None)  # type: ignore[arg-type]
    return runtime.inbox.page(query)


async def test_next_page_link_keeps_filters(client: httpx.AsyncClient, agent: dict[str, str],
                                            pat: Browser) -> None:
    for n in range(55):
        await ask(client, agent, title=f"Bulk {n}", labels=["bulk"])
    first = await pat.get("/?label=bulk&sort=newest")
    assert len(ids(first.text)) == 50
    link = re.search(r'<a href="([^"]+)" rel="next">', first.text)
    assert link and "label=bulk" in link.group(1)
    second = await pat.get(link.group(1).replace("&amp;", "&"))
    assert len(ids(second.text)) == 5
    assert set(ids(second.text)).isdisjoint(ids(first.text))
    assert "« Newest" in second.text


async def test_a_ticket_asked_while_the_page_is_read_comes_through_its_stream(
        client: httpx.AsyncClient, agent: dict[str, str], runtime: HubRuntime,
        pat: Browser, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's stream resumes from the log's end as it was before the page was read:
    a ticket committed in between, not on the page, is after it (not skipped)."""
    read_page = runtime.inbox.page
    late: list[int] = []

    def page_then_an_ask(query: InboxQuery):  # type: ignore[no-untyped-def]
        result = read_page(query)
        if not late:  # another request commits right after the page was read
            late.append(runtime.tickets.ask(Actor("agent-1", Role.AGENT),
                                            TicketDraft(Kind.QUESTION, "Late"))[0].id)
        return result

    monkeypatch.setattr(runtime.inbox, "page", page_then_an_ask)
    html = (await pat.get("/")).text
    assert late and late[0] not in ids(html)
    since = int(re.search(r'data-stream="[^"]*since=(\d+)"', html).group(1))  # type: ignore[union-attr]
    after = runtime.events.since(since, limit=100)
    assert [e.ticket_id for e in after] == late


def test_live_filter_matches_like_the_query() -> None:
    from tickethub.domain.status import Kind, Status
    from tickethub.domain.tickets import Ticket
    now = datetime.now(UTC)
    t = Ticket(1, Kind.QUESTION, "Deploy now?", "", Status.OPEN, "bot", now, now,
               labels=("ops",))
    assert InboxQuery(me="pat").matches(t)
    assert not InboxQuery(me="pat", view="me").matches(t)
    assert InboxQuery(me="pat", label="OPS", q="deploy").matches(t)
    assert not InboxQuery(me="pat", kind=Kind.APPROVAL).matches(t)
    assert not InboxQuery(me="pat", agent="other").matches(t)
