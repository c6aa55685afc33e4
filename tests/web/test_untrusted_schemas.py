"""The web form of a ticket whose schema came from an agent: its regular expressions run
on RE2 (a catastrophic pattern is answered at once, correctly), and a schema with a
remote ``$ref`` (stored by an older hub) is refused without fetching anything."""

from __future__ import annotations

import html

import httpx
import jsonschema._keywords
import jsonschema._utils
from bench.bait_server import BaitServer

from tests.web.conftest import Browser, ask
from tests.web.test_ticket_page import api_ticket, field_error
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.server.runtime import HubRuntime


class _NoBacktracking:
    def search(self, *args: object) -> None:
        raise AssertionError("jsonschema's backtracking re was used on a caller's pattern")


async def test_a_catastrophic_pattern_in_the_form_is_checked_by_re2(
        client: httpx.AsyncClient, agent: dict[str, str], pat: Browser, monkeypatch) -> None:
    monkeypatch.setattr(jsonschema._keywords, "re", _NoBacktracking())
    monkeypatch.setattr(jsonschema._utils, "re", _NoBacktracking())
    schema = {"type": "object", "required": ["name"],
              "properties": {"name": {"type": "string", "pattern": "^(a+)+$"}}}
    ticket = await ask(client, agent, title="Name?", response_schema=schema)
    bad = await pat.post(f"/t/{ticket['id']}/answer",
                         {"version": "1", "f.name": "a" * 30 + "!"})
    assert bad.status_code == 422
    assert field_error(bad.text, "f-name") == "Name is not in the expected form."
    good = await pat.post(f"/t/{ticket['id']}/answer", {"version": "1", "f.name": "a" * 30})
    assert good.status_code == 303, good.text
    assert (await api_ticket(client, agent, ticket["id"]))["status"] == "answered"


async def test_a_stored_remote_ref_is_refused_at_the_form_unfetched(
        client: httpx.AsyncClient, runtime: HubRuntime, agent: dict[str, str],
        pat: Browser) -> None:
    with BaitServer() as bait:
        schema = {"type": "object", "properties": {"name": {"$ref": bait.url()}}}
        with runtime.store.write() as uow:
            ticket = uow.tickets.add(TicketDraft(kind=Kind.QUESTION, title="old",
                                                 response_schema=schema),
                                     "agent-1", runtime.clock.now())
        response = await pat.post(f"/t/{ticket.id}/answer", {"version": "1", "f.name": '"x"'})
        assert response.status_code == 422
        assert "not a local reference" in html.unescape(response.text)
        assert (await api_ticket(client, agent, ticket.id))["status"] == "open"
    assert bait.requests == []
