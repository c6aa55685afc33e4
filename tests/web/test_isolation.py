"""The read policy in the web inbox: a person with the agent role reads what an agent
token of theirs would (their tickets, the tree below them, what is assigned to them);
another's ticket page, tree and live rows are as for an unknown id. Responders read all."""

from __future__ import annotations

import httpx

from tests.conftest import make_token
from tests.web.conftest import PASSWORD, ask, sign_in
from tickethub.domain.actors import Role
from tickethub.server.runtime import HubRuntime


async def test_an_agent_role_person_reads_only_their_own_tickets(
        client: httpx.AsyncClient, runtime: HubRuntime, agent: dict[str, str]) -> None:
    runtime.sessions.set_password("sam", PASSWORD, Role.AGENT)
    sam = await make_token(client, "agent", "sam")
    theirs = await ask(client, agent, title="agent-1 private plan")
    mine = await ask(client, sam, title="sam's own question")
    assigned = await ask(client, agent, title="for sam to look at", assignee="sam")
    assert (await sign_in(client, "sam")).status_code == 303
    inbox = await client.get("/", params={"view": "all"})
    assert inbox.status_code == 200
    assert "sam&#39;s own question" in inbox.text or "sam's own question" in inbox.text
    assert "for sam to look at" in inbox.text
    assert "agent-1 private plan" not in inbox.text
    bad_filter = await client.get("/", params={"view": "nope"})  # the fallback page too
    assert "agent-1 private plan" not in bad_filter.text
    for path in (f"/t/{theirs['id']}", f"/tree/{theirs['id']}"):
        page = await client.get(path)
        assert page.status_code == 404, path
        assert "private plan" not in page.text
    for ticket in (mine, assigned):
        assert (await client.get(f"/t/{ticket['id']}")).status_code == 200
