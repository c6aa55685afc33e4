"""The native ticket API: ask, read, list, tree, messages, answer, approve, deny, move."""

from __future__ import annotations

import asyncio

from tests.conftest import make_token

QUESTION = {"title": "Deploy to prod?", "body": "The canary is green.", "labels": ["Ops"]}
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer"}},
          "required": ["ok"], "additionalProperties": False}


async def ask(client, headers, **fields):
    response = await client.post("/api/v1/tickets", json={**QUESTION, **fields}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


async def test_ask_returns_the_ticket_with_its_stable_fields(client, agent):
    ticket = await ask(client, agent, kind="question")
    assert ticket["status"] == "open" and ticket["outcome"] is None
    assert ticket["labels"] == ["ops"] and ticket["created_by"] == "agent-1"
    assert ticket["answer"] is None and ticket["version"] == 1
    assert ticket["url"].endswith(f"/api/v1/tickets/{ticket['id']}")
    fetched = (await client.get(f"/api/v1/tickets/{ticket['id']}", headers=agent)).json()
    assert fetched == ticket


async def test_a_retried_ask_with_the_same_idempotency_key_makes_one_ticket(client, agent):
    headers = {**agent, "Idempotency-Key": "req-42"}
    first = await client.post("/api/v1/tickets", json=QUESTION, headers=headers)
    again = await client.post("/api/v1/tickets", json=QUESTION, headers=headers)
    assert first.status_code == 201 and again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    listed = (await client.get("/api/v1/tickets", headers=agent)).json()["items"]
    assert len(listed) == 1


async def test_an_idempotency_key_reused_for_another_request_is_a_conflict(client, agent):
    headers = {**agent, "Idempotency-Key": "req-43"}
    await client.post("/api/v1/tickets", json=QUESTION, headers=headers)
    other = await client.post("/api/v1/tickets", json={"title": "Other"}, headers=headers)
    assert other.status_code == 409
    assert other.json()["code"] == "idempotency_key_reused"


async def test_answer_resolves_and_records_who_and_via(client, agent, responder):
    ticket = await ask(client, agent)
    response = await client.post(f"/api/v1/tickets/{ticket['id']}/answer",
                                 json={"text": "Ship it"},
                                 headers={**responder, "X-Tickethub-Via": "cli"})
    assert response.status_code == 200
    answered = response.json()
    assert answered["status"] == "answered" and answered["outcome"] == "answered"
    assert answered["answer"]["text"] == "Ship it"
    assert answered["answer"]["by"] == "alice" and answered["answer"]["via"] == "cli"
    assert answered["version"] == 2
    messages = (await client.get(f"/api/v1/tickets/{ticket['id']}/messages",
                                 headers=agent)).json()
    assert [(m["kind"], m["body"]) for m in messages] == [("answer", "Ship it")]


async def test_structured_answer_must_satisfy_the_response_schema(client, agent, responder):
    ticket = await ask(client, agent, response_schema=SCHEMA)
    bad = await client.post(f"/api/v1/tickets/{ticket['id']}/answer",
                            json={"data": {"ok": "yes"}}, headers=responder)
    assert bad.status_code == 422
    assert bad.headers["content-type"] == "application/problem+json"
    assert bad.json()["field"] == "data.ok"
    missing = await client.post(f"/api/v1/tickets/{ticket['id']}/answer",
                                json={"text": "sure"}, headers=responder)
    assert missing.status_code == 422 and missing.json()["field"] == "data"
    still = (await client.get(f"/api/v1/tickets/{ticket['id']}", headers=agent)).json()
    assert still["status"] == "open" and still["version"] == 1
    good = await client.post(f"/api/v1/tickets/{ticket['id']}/answer",
                             json={"data": {"ok": True, "n": 3}}, headers=responder)
    assert good.status_code == 200 and good.json()["answer"]["data"] == {"ok": True, "n": 3}


async def test_an_invalid_response_schema_is_refused_at_ask(client, agent):
    response = await client.post("/api/v1/tickets",
                                 json={**QUESTION, "response_schema": {"type": "banana"}},
                                 headers=agent)
    assert response.status_code == 422
    assert response.json()["field"].startswith("response_schema")


async def test_approve_with_an_edited_proposal_validated_against_the_schema(
        client, agent, responder):
    proposal = {"ok": True, "n": 10}
    ticket = await ask(client, agent, kind="approval", proposal=proposal, response_schema=SCHEMA)
    bad = await client.post(f"/api/v1/tickets/{ticket['id']}/approve",
                            json={"edited": {"ok": True, "n": "ten"}}, headers=responder)
    assert bad.status_code == 422 and bad.json()["field"] == "edited.n"
    good = await client.post(f"/api/v1/tickets/{ticket['id']}/approve",
                             json={"edited": {"ok": True, "n": 5}, "comment": "only 5"},
                             headers=responder)
    assert good.status_code == 200
    body = good.json()
    assert body["status"] == "approved" and body["outcome"] == "approved"
    assert body["answer"]["data"] == {"ok": True, "n": 5}
    assert body["answer"]["text"] == "only 5"


async def test_approve_without_edit_approves_the_proposal_and_deny_records_reason(
        client, agent, responder):
    first = await ask(client, agent, kind="approval", proposal={"cmd": "rm -rf /tmp/x"})
    approved = (await client.post(f"/api/v1/tickets/{first['id']}/approve", json={},
                                  headers=responder)).json()
    assert approved["answer"]["data"] == {"cmd": "rm -rf /tmp/x"}
    second = await ask(client, agent, kind="approval", proposal={"cmd": "drop table"})
    denied = await client.post(f"/api/v1/tickets/{second['id']}/deny",
                               json={"reason": "too risky"}, headers=responder)
    assert denied.json()["status"] == "denied"
    assert denied.json()["answer"]["text"] == "too risky"


async def test_nobody_approves_their_own_approval(client, admin):
    ticket = await ask(client, admin, kind="approval", proposal={"x": 1})
    response = await client.post(f"/api/v1/tickets/{ticket['id']}/approve", json={},
                                 headers=admin)
    assert response.status_code == 403 and response.json()["code"] == "forbidden"


async def test_an_agent_cannot_answer_or_approve(client, agent):
    other = await make_token(client, "agent", "agent-2")
    ticket = await ask(client, other, kind="approval", proposal={})
    for action in ("approve", "deny"):
        response = await client.post(f"/api/v1/tickets/{ticket['id']}/{action}", json={},
                                     headers=agent)
        assert response.status_code == 403
    question = await ask(client, other)
    response = await client.post(f"/api/v1/tickets/{question['id']}/answer",
                                 json={"text": "x"}, headers=agent)
    assert response.status_code == 403


async def test_answer_on_an_approval_and_approve_on_a_question_are_illegal(
        client, agent, responder):
    approval = await ask(client, agent, kind="approval", proposal={})
    response = await client.post(f"/api/v1/tickets/{approval['id']}/answer",
                                 json={"text": "ok"}, headers=responder)
    assert response.status_code == 409 and response.json()["code"] == "illegal_transition"
    question = await ask(client, agent)
    response = await client.post(f"/api/v1/tickets/{question['id']}/approve", json={},
                                 headers=responder)
    assert response.status_code == 409


async def test_a_second_answer_is_an_illegal_transition_naming_both_states(
        client, agent, responder):
    ticket = await ask(client, agent)
    await client.post(f"/api/v1/tickets/{ticket['id']}/answer", json={"text": "a"},
                      headers=responder)
    again = await client.post(f"/api/v1/tickets/{ticket['id']}/answer", json={"text": "b"},
                              headers=responder)
    assert again.status_code == 409
    problem = again.json()
    assert problem["code"] == "illegal_transition"
    assert problem["current"] == "answered" and problem["target"] == "answered"
    stored = (await client.get(f"/api/v1/tickets/{ticket['id']}", headers=agent)).json()
    assert stored["answer"]["text"] == "a"


async def test_transitions_in_progress_defer_reopen_done_cancel(client, agent, responder):
    ticket = await ask(client, agent)
    tid = ticket["id"]

    async def move(to, **extra):
        return await client.post(f"/api/v1/tickets/{tid}/transition", json={"to": to, **extra},
                                 headers=responder)

    assert (await move("in_progress")).json()["status"] == "in_progress"
    deferred = (await move("deferred", until="2099-01-01T00:00:00Z")).json()
    assert deferred["status"] == "deferred"
    assert deferred["next_attention_at"].startswith("2099-01-01")
    assert (await move("done")).json()["status"] == "done"
    reopened = (await move("open")).json()
    assert reopened["status"] == "open" and reopened["answer"] is None
    assert (await move("cancelled", reason="not needed")).json()["status"] == "cancelled"
    events = (await client.get(f"/api/v1/events?ticket_id={tid}", headers=agent)).json()
    assert [e["data"].get("to") for e in events["items"][1:]] == [
        "in_progress", "deferred", "done", "open", "cancelled"]


async def test_transition_bad_inputs(client, agent, responder):
    ticket = await ask(client, agent)
    url = f"/api/v1/tickets/{ticket['id']}/transition"
    no_until = await client.post(url, json={"to": "deferred"}, headers=responder)
    assert no_until.status_code == 422 and no_until.json()["field"] == "until"
    past = await client.post(url, json={"to": "deferred", "until": "2001-01-01T00:00:00Z"},
                             headers=responder)
    assert past.status_code == 422 and past.json()["field"] == "until"
    unknown = await client.post(url, json={"to": "answered"}, headers=responder)
    assert unknown.status_code == 422 and unknown.json()["field"] == "to"
    reopen_open = await client.post(url, json={"to": "open"}, headers=responder)
    assert reopen_open.status_code == 409


async def test_an_agent_may_cancel_its_own_ticket_but_not_anothers(client, agent):
    mine = await ask(client, agent)
    other_agent = await make_token(client, "agent", "agent-2")
    theirs = await ask(client, other_agent)
    ok = await client.post(f"/api/v1/tickets/{mine['id']}/transition", json={"to": "cancelled"},
                           headers=agent)
    assert ok.status_code == 200
    # Another agent's ticket does not exist for this one (the read policy)...
    hidden = await client.post(f"/api/v1/tickets/{theirs['id']}/transition",
                               json={"to": "cancelled"}, headers=agent)
    assert hidden.status_code == 404
    # ...and one assigned to it is readable, but not its own to cancel.
    shared = await ask(client, other_agent, assignee="agent-1")
    refused = await client.post(f"/api/v1/tickets/{shared['id']}/transition",
                                json={"to": "cancelled"}, headers=agent)
    assert refused.status_code == 403


async def test_a_stale_version_is_a_conflict_and_changes_nothing(client, agent, responder):
    ticket = await ask(client, agent)
    tid = ticket["id"]
    assigned = await client.post(f"/api/v1/tickets/{tid}/assign",
                                 json={"assignee": "bob", "version": 1}, headers=responder)
    assert assigned.json()["version"] == 2
    stale = await client.post(f"/api/v1/tickets/{tid}/answer",
                              json={"text": "late", "version": 1}, headers=responder)
    assert stale.status_code == 409
    assert stale.json()["code"] == "stale_version" and stale.json()["field"] == "version"
    assert (await client.get(f"/api/v1/tickets/{tid}", headers=agent)).json()["status"] == "open"


async def test_labels_and_assignee(client, agent, responder):
    ticket = await ask(client, agent)
    tid = ticket["id"]
    labeled = await client.post(f"/api/v1/tickets/{tid}/labels",
                                json={"add": ["Urgent", "billing"], "remove": ["ops"]},
                                headers=responder)
    assert labeled.json()["labels"] == ["billing", "urgent"]
    by_label = (await client.get("/api/v1/tickets?label=urgent", headers=agent)).json()
    assert [t["id"] for t in by_label["items"]] == [tid]
    gone = (await client.get("/api/v1/tickets?label=ops", headers=agent)).json()
    assert gone["items"] == []
    await client.post(f"/api/v1/tickets/{tid}/assign", json={"assignee": "bob"},
                      headers=responder)
    mine = (await client.get("/api/v1/tickets?assignee=bob", headers=agent)).json()
    assert [t["id"] for t in mine["items"]] == [tid]


async def test_list_filters_search_and_cursor_pagination(client, agent, responder):
    made = []
    for i in range(7):
        kind = "approval" if i % 3 == 0 else "question"
        made.append(await ask(client, agent, title=f"Ticket {i}", kind=kind,
                              body="needle" if i == 4 else "hay"))
    await client.post(f"/api/v1/tickets/{made[1]['id']}/messages",
                      json={"body": "a message with a Haystack inside"}, headers=responder)
    approvals = (await client.get("/api/v1/tickets?kind=approval", headers=agent)).json()
    assert [t["title"] for t in approvals["items"]] == ["Ticket 6", "Ticket 3", "Ticket 0"]
    found = (await client.get("/api/v1/tickets?q=NEEDLE", headers=agent)).json()
    assert [t["title"] for t in found["items"]] == ["Ticket 4"]
    in_messages = (await client.get("/api/v1/tickets?q=haystack", headers=agent)).json()
    assert [t["title"] for t in in_messages["items"]] == ["Ticket 1"]
    literal = (await client.get("/api/v1/tickets?q=%25", headers=agent)).json()
    assert literal["items"] == []
    seen, cursor = [], None
    while True:
        url = "/api/v1/tickets?limit=3" + (f"&cursor={cursor}" if cursor else "")
        page = (await client.get(url, headers=agent)).json()
        seen += [t["id"] for t in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == sorted((t["id"] for t in made), reverse=True)
    by_creator = (await client.get("/api/v1/tickets?created_by=nobody", headers=agent)).json()
    assert by_creator["items"] == []
    status = (await client.get("/api/v1/tickets?status=open&status=answered",
                               headers=agent)).json()
    assert len(status["items"]) == 7


async def test_tree_returns_the_subtree_to_a_depth(client, agent):
    root = await ask(client, agent, title="root", kind="task")
    child = await ask(client, agent, title="child", parent_id=root["id"])
    grandchild = await ask(client, agent, title="grandchild", parent_id=child["id"])
    await ask(client, agent, title="elsewhere")
    tree = (await client.get(f"/api/v1/tickets/{root['id']}/tree?depth=5", headers=agent)).json()
    assert tree["ticket"]["id"] == root["id"]
    assert [c["ticket"]["id"] for c in tree["children"]] == [child["id"]]
    assert [g["ticket"]["id"] for g in tree["children"][0]["children"]] == [grandchild["id"]]
    shallow = (await client.get(f"/api/v1/tickets/{root['id']}/tree?depth=1",
                                headers=agent)).json()
    assert shallow["children"][0]["children"] == []
    children = (await client.get(f"/api/v1/tickets?parent_id={root['id']}",
                                 headers=agent)).json()
    assert [t["id"] for t in children["items"]] == [child["id"]]


async def test_unknown_parent_is_404_naming_parent_id(client, agent):
    response = await client.post("/api/v1/tickets", json={**QUESTION, "parent_id": 999},
                                 headers=agent)
    assert response.status_code == 404 and response.json()["field"] == "parent_id"


async def test_messages_are_kept_in_order(client, agent, responder):
    ticket = await ask(client, agent)
    for body, who in (("first", agent), ("second", responder)):
        response = await client.post(f"/api/v1/tickets/{ticket['id']}/messages",
                                     json={"body": body}, headers=who)
        assert response.status_code == 201
    messages = (await client.get(f"/api/v1/tickets/{ticket['id']}/messages",
                                 headers=agent)).json()
    assert [(m["author"], m["body"], m["trusted"]) for m in messages] == [
        ("agent-1", "first", True), ("alice", "second", True)]


async def test_concurrent_answers_give_one_winner_and_one_conflict(client, agent, responder):
    ticket = await ask(client, agent)
    url = f"/api/v1/tickets/{ticket['id']}/answer"
    results = await asyncio.gather(*[
        client.post(url, json={"text": f"answer {i}"}, headers=responder) for i in range(4)
    ])
    codes = sorted(r.status_code for r in results)
    assert codes == [200, 409, 409, 409]
    events = (await client.get(f"/api/v1/events?ticket_id={ticket['id']}", headers=agent)).json()
    assert [e["type"] for e in events["items"]] == ["ticket.created", "ticket.answered"]
