"""The sync Hub against a real hub process: every call, every error class."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from tickethub.sdk import (
    AuthenticationError,
    ConflictError,
    Hub,
    HubUnavailable,
    NotFoundError,
    PermissionDeniedError,
    Ticket,
    ValidationError,
)
from tickethub.sdk.testing import free_port


def in_thread(fn, *args, **kwargs):
    """Run fn in a thread; return (thread, result dict)."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


def test_ask_get_and_fields(agent: Hub, unique: str) -> None:
    due = datetime.now(UTC) + timedelta(hours=1)
    t = agent.ask("Which region?", body="for the new cluster", labels=[unique, "infra"],
                  assignee="alice", due_at=due, refs={"build": "42"})
    assert isinstance(t, Ticket)
    assert (t.kind, t.status, t.outcome, t.waiting) == ("question", "open", None, True)
    assert set(t.labels) == {unique, "infra"} and t.assignee == "alice"
    assert t.due_at is not None and abs((t.due_at - due).total_seconds()) < 1
    assert t.refs == {"build": "42"} and t.created_by == "sdk-agent"
    assert t.url.endswith(f"/api/v1/tickets/{t.id}") and t.html_url.endswith(f"/t/{t.id}")
    assert agent.get(t.id) == t


def test_due_at_accepts_timedelta_and_refuses_naive_datetime(agent: Hub) -> None:
    t = agent.ask("soon", due_at=timedelta(minutes=5))
    assert t.due_at is not None and t.due_at > datetime.now(UTC)
    with pytest.raises(ValueError, match="timezone-aware"):
        agent.ask("naive", due_at=datetime(2030, 1, 1))


def test_list_follows_every_page_and_filters(agent: Hub, unique: str) -> None:
    made = [agent.ask(f"q{i}", labels=[unique]).id for i in range(5)]
    agent.ask("other kind", kind="task", labels=[unique])
    found = [t.id for t in agent.list(label=unique, kind="question", limit=2)]
    assert found == sorted(made, reverse=True)
    assert [t.title for t in agent.list(label=unique, q="other")] == ["other kind"]
    assert list(agent.list(label=unique, status="answered")) == []


def test_tree_messages_and_post(agent: Hub, responder: Hub) -> None:
    root = agent.ask("plan the launch", kind="task")
    child = agent.ask("book the venue", kind="task", parent_id=root.id)
    grandchild = agent.ask("compare prices", parent_id=child.id)
    tree = agent.tree(root.id, depth=3)
    assert [(d, t.id) for d, t in tree.walk()] == [(0, root.id), (1, child.id),
                                                    (2, grandchild.id)]
    assert agent.tree(root.id, depth=1).children[0].children == ()
    message = responder.post(child.id, "on it", data={"eta": "2d"})
    assert (message.author, message.via, message.data) == ("sdk-alice", "sdk-test",
                                                           {"eta": "2d"})
    assert [m.body for m in agent.messages(child.id)] == ["on it"]


def test_answer_with_data_is_validated_against_the_schema(agent: Hub, responder: Hub) -> None:
    schema = {"type": "object", "required": ["region"],
              "properties": {"region": {"type": "string"}}}
    t = agent.ask("region?", response_schema=schema)
    with pytest.raises(ValidationError) as caught:
        responder.answer(t.id, "here", data={"region": 3})
    assert caught.value.status == 422 and caught.value.field is not None
    assert "region" in caught.value.field
    done = responder.answer(t.id, "eu", data={"region": "eu-west-1"})
    assert done.outcome == "answered" and done.answer is not None
    assert (done.answer.text, done.answer.data, done.answer.by, done.answer.via) == (
        "eu", {"region": "eu-west-1"}, "sdk-alice", "sdk-test")


def test_approve_deny_and_the_conflict_they_cause(agent: Hub, responder: Hub) -> None:
    yes = agent.ask("deploy?", kind="approval", proposal={"replicas": 3})
    no = agent.ask("drop the table?", kind="approval")
    approved = responder.approve(yes.id, comment="ok", edited={"replicas": 2})
    assert approved.approved and approved.answer is not None
    assert approved.answer.data == {"replicas": 2}
    denied = responder.deny(no.id, reason="never")
    assert denied.denied and not denied.approved
    with pytest.raises(ConflictError) as caught:
        responder.approve(no.id)
    error = caught.value
    assert (error.status, error.code, error.field) == (409, "illegal_transition", "status")
    assert error.problem["current"] == "denied" and error.problem["target"] == "approved"


def test_transition_assign_label(agent: Hub, unique: str) -> None:
    t = agent.ask("later", labels=[unique])
    deferred = agent.transition(t.id, "deferred", until=timedelta(hours=1), reason="busy")
    assert deferred.status == "deferred" and deferred.next_attention_at is not None
    assert agent.transition(t.id, "in_progress").status == "in_progress"
    assert agent.assign(t.id, "bob").assignee == "bob"
    assert agent.assign(t.id, None).assignee is None
    assert agent.label(t.id, add=["x"], remove=[unique]).labels == ("x",)
    assert agent.transition(t.id, "cancelled").outcome == "cancelled"
    assert agent.transition(t.id, "open").waiting


def test_idempotency_key_makes_one_ticket(agent: Hub) -> None:
    first = agent.ask("once", idempotency_key="sdk-key-1")
    again = agent.ask("once", idempotency_key="sdk-key-1")
    assert again.id == first.id
    with pytest.raises(ConflictError) as caught:
        agent.ask("something else", idempotency_key="sdk-key-1")
    assert caught.value.code == "idempotency_key_reused"


def test_errors_carry_status_code_field(hub_process, hub: Hub, agent: Hub) -> None:
    with pytest.raises(NotFoundError) as missing:
        hub.get(10**9)
    assert (missing.value.status, missing.value.code, missing.value.field) == (
        404, "not_found", "id")
    assert str(missing.value) == f"{missing.value.detail} (not_found, field id)"
    with Hub(hub_process.url, token="") as anonymous, pytest.raises(AuthenticationError) as anon:
        anonymous.get(1)
    assert anon.value.status == 401 and "TICKETHUB_TOKEN" in anon.value.detail
    with Hub(hub_process.url, "th_wrong") as wrong, pytest.raises(AuthenticationError):
        wrong.get(1)
    with pytest.raises(PermissionDeniedError) as forbidden:
        agent.create_token("admin", "sneaky")
    assert forbidden.value.status == 403
    with pytest.raises(ValidationError) as invalid:
        agent.ask("")
    assert invalid.value.field == "title"


def test_url_and_token_come_from_the_environment(hub_process, monkeypatch, agent_token) -> None:
    monkeypatch.setenv("TICKETHUB_URL", hub_process.url + "/")
    monkeypatch.setenv("TICKETHUB_TOKEN", agent_token)
    with Hub() as hub:
        assert hub.url == hub_process.url
        assert hub.me()["name"] == "sdk-agent"


def test_wait_returns_as_soon_as_the_ticket_is_answered(agent: Hub, responder: Hub) -> None:
    t = agent.ask("quick?")
    thread, box = in_thread(t.wait, timeout=30)
    time.sleep(0.3)
    assert thread.is_alive()
    responder.answer(t.id, "yes")
    thread.join(10)
    result = box["value"]
    assert isinstance(result, Ticket)
    assert result.outcome == "answered" and result.answer.text == "yes"


def test_wait_timeout_returns_the_ticket_still_waiting(agent: Hub) -> None:
    t = agent.ask("nobody answers")
    started = time.monotonic()
    result = agent.wait(t.id, timeout=0.5)
    assert result.waiting and result.id == t.id
    assert 0.4 < time.monotonic() - started < 5


def test_wait_on_an_unknown_ticket_raises_at_once(agent: Hub) -> None:
    with pytest.raises(NotFoundError):
        agent.wait(10**9, timeout=30)


def test_ask_and_wait(agent: Hub, responder: Hub, unique: str) -> None:
    thread, box = in_thread(agent.ask_and_wait, "approve?", kind="approval",
                            labels=[unique], timeout=30)
    deadline = time.monotonic() + 10
    while not (found := list(responder.list(label=unique))) and time.monotonic() < deadline:
        time.sleep(0.05)
    responder.approve(found[0].id, comment="fine")
    thread.join(10)
    assert box["value"].approved


def test_events_pages_and_stream(agent: Hub, responder: Hub) -> None:
    t = agent.ask("watched")
    mine = [e.type for e in agent.events(since=0, ticket_id=t.id)]
    assert mine == ["ticket.created"]
    stream = agent.stream_events(ticket_id=t.id)
    thread, box = in_thread(lambda: [next(stream) for _ in range(2)])
    time.sleep(0.5)
    responder.post(t.id, "hello")
    responder.answer(t.id, "done")
    thread.join(10)
    stream.close()
    events = box["value"]
    assert [e.type for e in events] == ["message.posted", "ticket.answered"]
    assert events[0].seq < events[1].seq and all(e.ticket_id == t.id for e in events)


def test_stream_from_a_cursor_ahead_of_the_log_is_refused(agent: Hub) -> None:
    with pytest.raises(ConflictError) as caught:
        next(agent.stream_events(since=10**9))
    assert caught.value.code == "cursor_ahead"


def test_token_admin(hub: Hub, hub_process) -> None:
    token = hub.create_token("responder", "sdk-bob")
    with Hub(hub_process.url, token) as bob:
        me = bob.me()
        assert (me["name"], me["role"]) == ("sdk-bob", "responder")
    listed = [t for t in hub.tokens() if t.name == "sdk-bob"]
    assert len(listed) == 1 and listed[0].revoked_at is None
    hub.revoke_token(listed[0].id)
    with Hub(hub_process.url, token) as bob, pytest.raises(AuthenticationError):
        bob.me()


def test_an_unreachable_hub_is_a_hub_error() -> None:
    with Hub(f"http://127.0.0.1:{free_port()}", "t") as nowhere:
        with pytest.raises(HubUnavailable) as caught:
            nowhere.get(1)
        assert (caught.value.status, caught.value.code) == (0, "unreachable")
        started = time.monotonic()
        with pytest.raises(HubUnavailable):
            nowhere.wait(1, timeout=1.0)  # retried until the timeout, then raised
        assert 0.9 < time.monotonic() - started < 5
