"""The read policy on the native API: an agent reads the tickets it created, their
subtrees and what is assigned to it; a ticket it may not read answers 404 like an
unknown id and is left out of lists, trees and event pages. A ``read:all`` token and a
responder read everything. Runs on SQLite and PostgreSQL (the filter is SQL)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.conftest import make_scoped_token, make_token

API = "/api/v1"


@dataclass
class World:
    """Agents A and B, each with tickets; B's ticket under A's and one assigned to A."""

    a: dict[str, str]
    b: dict[str, str]
    a_root: dict[str, Any]
    b_child: dict[str, Any]  # B's ticket in A's tree: A reads it, B too (its own)
    a_grandchild: dict[str, Any]
    b_root: dict[str, Any]
    b_assigned_to_a: dict[str, Any]
    b_private_child: dict[str, Any]  # under B's root: only B (and readers of all)
    a_sibling: dict[str, Any]  # A's, beside B's child under the part assigned to B


async def _ask(client: httpx.AsyncClient, headers: dict[str, str], title: str,
               **fields: Any) -> dict[str, Any]:
    response = await client.post(f"{API}/tickets", json={"kind": "question", "title": title,
                                                        **fields}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


@pytest.fixture
async def world(client: httpx.AsyncClient, responder: dict[str, str]) -> World:
    a = await make_token(client, "agent", "agent-a")
    b = await make_token(client, "agent", "agent-b")
    a_root = await _ask(client, a, "A's root")
    b_root = await _ask(client, b, "B's root")
    # A responder splits A's work: B does a part of it (assigned, so B reads it) and
    # adds a sub-question of its own under it.
    shared = await _ask(client, responder, "part of A's work", parent_id=a_root["id"],
                        assignee="agent-b")
    b_child = await _ask(client, b, "B's child in A's tree", parent_id=shared["id"])
    a_grandchild = await _ask(client, a, "A's grandchild", parent_id=b_child["id"])
    b_assigned_to_a = await _ask(client, b, "for A", assignee="agent-a")
    b_private_child = await _ask(client, b, "B's private child", parent_id=b_root["id"])
    a_sibling = await _ask(client, a, "A's other notes", parent_id=shared["id"])
    return World(a, b, a_root, b_child, a_grandchild, b_root, b_assigned_to_a,
                 b_private_child, a_sibling)


def _ids(response: httpx.Response) -> set[int]:
    assert response.status_code == 200, response.text
    return {t["id"] for t in response.json()["items"]}


async def test_an_agent_does_not_see_another_agents_ticket(client, world: World) -> None:
    hidden = world.a_root["id"]
    for path in (f"/tickets/{hidden}", f"/tickets/{hidden}/tree",
                 f"/tickets/{hidden}/messages", f"/tickets/{hidden}/wait?timeout=0"):
        response = await client.get(API + path, headers=world.b)
        assert response.status_code == 404, (path, response.text)
        unknown = await client.get(API + path.replace(str(hidden), "999999"),
                                   headers=world.b)
        # The same answer as for an id that does not exist: nothing leaks.
        assert response.json()["detail"].replace(str(hidden), "N") == \
            unknown.json()["detail"].replace("999999", "N")


async def test_an_agent_cannot_change_or_join_another_agents_ticket(client, world: World
                                                                    ) -> None:
    hidden = world.a_root["id"]
    calls = [
        ("post", f"/tickets/{hidden}/messages", {"body": "hello"}),
        ("post", f"/tickets/{hidden}/transition", {"to": "cancelled"}),
        ("post", f"/tickets/{hidden}/assign", {"assignee": "agent-b"}),
        ("post", f"/tickets/{hidden}/labels", {"add": ["x"]}),
        ("post", "/tickets", {"kind": "question", "title": "sneak in", "parent_id": hidden}),
    ]
    for method, path, body in calls:
        response = await client.request(method, API + path, json=body, headers=world.b)
        assert response.status_code == 404, (path, response.text)
    messages = await client.get(f"{API}/tickets/{hidden}/messages", headers=world.a)
    assert messages.json() == []


async def test_an_agent_reads_its_own_tree_and_what_is_assigned_to_it(
        client, world: World) -> None:
    listed = _ids(await client.get(f"{API}/tickets", headers=world.a))
    mine = {world.a_root["id"], world.b_child["id"], world.a_grandchild["id"],
            world.b_assigned_to_a["id"]}
    assert mine <= listed
    assert world.b_root["id"] not in listed
    assert world.b_private_child["id"] not in listed
    for ticket in (world.b_child, world.b_assigned_to_a):
        response = await client.get(f"{API}/tickets/{ticket['id']}", headers=world.a)
        assert response.status_code == 200
    # Filters combine with the policy, never widen it.
    by_b = _ids(await client.get(f"{API}/tickets", params={"created_by": "agent-b"},
                                 headers=world.a))
    assert by_b == {world.b_child["id"], world.b_assigned_to_a["id"]}


async def test_the_tree_holds_only_what_the_agent_reads(client, world: World) -> None:
    # B reads the ticket assigned to it and its own child below, not A's root above
    # nor A's other child beside its own.
    tree = await client.get(f"{API}/tickets/{world.b_child['parent_id']}/tree",
                            headers=world.b)
    assert tree.status_code == 200
    children = tree.json()["children"]
    assert [c["ticket"]["id"] for c in children] == [world.b_child["id"]]
    # A's grandchild lies below B's child, so B reads it as well.
    assert [c["ticket"]["id"] for c in children[0]["children"]] == [world.a_grandchild["id"]]
    whole = await client.get(f"{API}/tickets/{world.a_root['id']}/tree", headers=world.a)
    assert whole.status_code == 200
    part = whole.json()["children"][0]
    assert {c["ticket"]["id"] for c in part["children"]} == {world.b_child["id"],
                                                             world.a_sibling["id"]}


async def test_a_read_all_token_and_a_responder_read_everything(
        client, world: World, responder: dict[str, str]) -> None:
    auditor = await make_scoped_token(client, "agent", "auditor", ["read:all"])
    everything = {world.a_root["id"], world.b_root["id"], world.b_private_child["id"]}
    for headers in (auditor, responder):
        assert everything <= _ids(await client.get(f"{API}/tickets", headers=headers))
        response = await client.get(f"{API}/tickets/{world.b_private_child['id']}",
                                    headers=headers)
        assert response.status_code == 200
    # Reading is all the scope adds: the auditor still cannot change B's ticket.
    refused = await client.post(f"{API}/tickets/{world.b_root['id']}/transition",
                                json={"to": "cancelled"}, headers=auditor)
    assert refused.status_code == 403


async def test_event_pages_leave_out_tickets_the_agent_does_not_read(
        client, world: World) -> None:
    page = await client.get(f"{API}/events", params={"limit": 1000}, headers=world.b)
    assert page.status_code == 200
    seen = {e["ticket_id"] for e in page.json()["items"]}
    assert world.a_root["id"] not in seen
    assert {world.b_root["id"], world.b_child["id"]} <= seen
    everything = await client.get(f"{API}/events", params={"limit": 1000},
                                  headers=world.a)
    assert world.b_root["id"] not in {e["ticket_id"] for e in everything.json()["items"]}
    # The cursor moves past what was left out, so a poll does not scan it again.
    assert page.json()["last_seq"] == max(e["seq"] for e in (await client.get(
        f"{API}/events", params={"limit": 1000},
        headers=await make_scoped_token(client, "agent", "all", ["read:all"]))
    ).json()["items"])
    # Resuming after a seq still filters; a subtree it may not read is unknown.
    resumed = await client.get(f"{API}/events", params={"since": 1, "limit": 1000},
                               headers=world.b)
    assert world.a_root["id"] not in {e["ticket_id"] for e in resumed.json()["items"]}
    subtree = await client.get(f"{API}/events", params={"subtree": world.a_root["id"]},
                               headers=world.b)
    assert subtree.status_code == 404


async def test_the_event_stream_leaves_out_tickets_the_agent_does_not_read(
        live_client: httpx.AsyncClient) -> None:
    a = await make_token(live_client, "agent", "agent-a")
    b = await make_token(live_client, "agent", "agent-b")
    got: list[dict[str, Any]] = []

    async def read_stream() -> None:
        async with live_client.stream("GET", f"{API}/events/stream",
                                      params={"since": 0}, headers=b) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    got.append(json.loads(line[6:]))
                    if got[-1]["data"].get("title") == "B's last":
                        return

    reader = asyncio.create_task(read_stream())
    a_ticket = await _ask(live_client, a, "A's secret")
    b_ticket = await _ask(live_client, b, "B's last")
    await asyncio.wait_for(reader, 10)
    ids = {e["ticket_id"] for e in got}
    assert b_ticket["id"] in ids
    assert a_ticket["id"] not in ids
