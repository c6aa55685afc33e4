"""Every decision on the record: each answer, approval, edit and denial is a message with
its data and a ``ticket.answered`` event with its data, and a reopened ticket still shows
every earlier outcome."""

from __future__ import annotations

from typing import Any

import httpx

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
PLAN = {"type": "object", "properties": {"hosts": {"type": "integer", "maximum": 10}},
        "required": ["hosts"]}


async def _ask(client: httpx.AsyncClient, headers: dict[str, str], **fields: Any
               ) -> dict[str, Any]:
    response = await client.post("/api/v1/tickets", json={"title": "Go?", **fields},
                                 headers=headers)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def _do(client: httpx.AsyncClient, headers: dict[str, str], ticket_id: int, action: str,
              body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post(f"/api/v1/tickets/{ticket_id}/{action}", json=body,
                                 headers=headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def _messages(client: httpx.AsyncClient, headers: dict[str, str], ticket_id: int
                    ) -> list[dict[str, Any]]:
    response = await client.get(f"/api/v1/tickets/{ticket_id}/messages", headers=headers)
    assert response.status_code == 200, response.text
    return list(response.json())


async def _answered_events(client: httpx.AsyncClient, headers: dict[str, str],
                           ticket_id: int) -> list[dict[str, Any]]:
    response = await client.get("/api/v1/events", params={"ticket_id": ticket_id},
                                headers=headers)
    assert response.status_code == 200, response.text
    return [e["data"] for e in response.json()["items"] if e["type"] == "ticket.answered"]


async def test_a_data_only_answer_is_a_message_and_an_event_with_its_data(
        client, agent, responder) -> None:
    ticket = await _ask(client, agent, response_schema=SCHEMA)
    await _do(client, responder, ticket["id"], "answer", {"data": {"ok": True}})
    [message] = await _messages(client, agent, ticket["id"])
    assert message["kind"] == "answer" and message["decision"] == "answered"
    assert message["data"] == {"ok": True} and message["author"] == "alice"
    [event] = await _answered_events(client, agent, ticket["id"])
    assert event["data"] == {"ok": True} and event["text"] is None
    assert event["message_id"] == message["id"] and event["outcome"] == "answered"


async def test_approvals_edits_and_denials_are_messages_and_events_with_their_data(
        client, agent, responder) -> None:
    plain = await _ask(client, agent, kind="approval", proposal={"hosts": 3},
                       response_schema=PLAN)
    await _do(client, responder, plain["id"], "approve", {})
    edited = await _ask(client, agent, kind="approval", proposal={"hosts": 3},
                        response_schema=PLAN)
    await _do(client, responder, edited["id"], "approve", {"edited": {"hosts": 2}})
    denied = await _ask(client, agent, kind="approval", proposal={"hosts": 9},
                        response_schema=PLAN)
    await _do(client, responder, denied["id"], "deny", {"reason": "Too many"})
    records = []
    for ticket in (plain, edited, denied):
        [message] = await _messages(client, agent, ticket["id"])
        [event] = await _answered_events(client, agent, ticket["id"])
        assert event["message_id"] == message["id"]
        records.append((message["decision"], message["body"], message["data"],
                        event["outcome"], event.get("edited"), event["data"], event["text"]))
    assert records == [
        ("approved", "", {"hosts": 3}, "approved", False, {"hosts": 3}, None),
        ("edited", "", {"hosts": 2}, "approved", True, {"hosts": 2}, None),
        ("denied", "Too many", None, "denied", None, None, "Too many"),
    ]


async def test_a_reopened_ticket_keeps_every_earlier_outcome(client, agent, responder) -> None:
    ticket = await _ask(client, agent, response_schema=SCHEMA)
    await _do(client, responder, ticket["id"], "answer", {"data": {"ok": False}})
    await _do(client, agent, ticket["id"], "transition", {"to": "open", "reason": "retry"})
    second = await _do(client, responder, ticket["id"], "answer",
                       {"text": "Now yes", "data": {"ok": True}})
    assert second["answer"]["data"] == {"ok": True}
    decisions = [(m["decision"], m["body"], m["data"])
                 for m in await _messages(client, agent, ticket["id"])
                 if m["kind"] == "answer"]
    assert decisions == [("answered", "", {"ok": False}),
                         ("answered", "Now yes", {"ok": True})]
    events = await _answered_events(client, agent, ticket["id"])
    assert [e["data"] for e in events] == [{"ok": False}, {"ok": True}]


async def test_comments_carry_no_decision(client, agent) -> None:
    ticket = await _ask(client, agent)
    posted = await client.post(f"/api/v1/tickets/{ticket['id']}/messages",
                               json={"body": "any news?"}, headers=agent)
    assert posted.status_code == 201 and posted.json()["decision"] is None
