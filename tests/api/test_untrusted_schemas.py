"""A caller's response_schema through the native API: it never makes the hub fetch
anything, every problem with it is a 422 at ask naming the place, an accepted ticket is
always answerable without a 5xx, and its checks never run inside a write transaction."""

from __future__ import annotations

from contextlib import contextmanager

from bench.bait_server import BaitServer

from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft

QUESTION = {"title": "Which city?", "body": "Pick one."}


async def ask(client, headers, **fields):
    return await client.post("/api/v1/tickets", json={**QUESTION, **fields}, headers=headers)


async def test_a_remote_ref_is_a_422_at_ask_and_nothing_is_fetched(client, agent):
    with BaitServer() as bait:
        response = await ask(client, agent, response_schema={
            "type": "object", "properties": {"city": {"$ref": bait.url("/city.json")}}})
        assert response.status_code == 422, response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["field"] == "response_schema.properties.city.$ref"
        listed = (await client.get("/api/v1/tickets", headers=agent)).json()["items"]
    assert listed == [] and bait.requests == []


async def test_a_dangling_local_ref_is_a_422_at_ask(client, agent):
    response = await ask(client, agent, response_schema={"$ref": "#/$defs/nope"})
    assert response.status_code == 422
    assert response.json()["field"] == "response_schema.$ref"


async def test_a_catastrophic_pattern_is_answered_at_once_and_correctly(
        client, agent, responder):
    schema = {"type": "object", "properties": {"name": {"type": "string",
                                                        "pattern": "^(a+)+$"}}}
    ticket = (await ask(client, agent, response_schema=schema)).json()
    bad = await client.post(f"/api/v1/tickets/{ticket['id']}/answer",
                            json={"data": {"name": "a" * 30 + "!"}}, headers=responder)
    assert bad.status_code == 422 and bad.json()["field"] == "data.name"
    assert "does not match" in bad.json()["detail"]
    good = await client.post(f"/api/v1/tickets/{ticket['id']}/answer",
                             json={"data": {"name": "a" * 30}}, headers=responder)
    assert good.status_code == 200 and good.json()["status"] == "answered"
    approval = await ask(client, agent, kind="approval", response_schema=schema,
                         proposal={"name": "a" * 30 + "!"})
    assert approval.status_code == 422 and approval.json()["field"] == "proposal.name"


async def test_a_pattern_re2_refuses_is_a_422_at_ask(client, agent):
    response = await ask(client, agent, response_schema={
        "type": "string", "pattern": r"^(?=.*\d)(\w)\1$"})
    assert response.status_code == 422
    assert response.json()["field"] == "response_schema.pattern"


async def test_too_deep_or_too_big_schemas_are_422(client, agent):
    deep: dict = {"type": "string"}
    for _ in range(40):
        deep = {"type": "object", "properties": {"x": deep}}
    response = await ask(client, agent, response_schema=deep)
    assert response.status_code == 422
    assert response.json()["field"].startswith("response_schema.properties.x.properties.x")
    big = {"enum": [f"choice-{n:06d}-" + "x" * 40 for n in range(6_000)]}
    response = await ask(client, agent, response_schema=big)
    assert response.status_code == 422 and response.json()["field"] == "response_schema"
    assert "larger than" in response.json()["detail"]


async def test_a_schema_stored_before_the_checks_is_never_fetched_at_answer(
        client, runtime, agent, responder):
    """A ticket written by an older hub may hold a remote ref: answering it is a 422 (the
    ticket stays open), and still nothing is fetched."""
    with BaitServer() as bait:
        with runtime.store.write() as uow:
            ticket = uow.tickets.add(TicketDraft(
                kind=Kind.QUESTION, title="old", response_schema={"$ref": bait.url()}),
                "agent-1", runtime.clock.now())
        response = await client.post(f"/api/v1/tickets/{ticket.id}/answer",
                                     json={"data": "x"}, headers=responder)
        assert response.status_code == 422
        assert response.json()["field"] == "response_schema.$ref"
        still = (await client.get(f"/api/v1/tickets/{ticket.id}", headers=agent)).json()
    assert still["status"] == "open" and bait.requests == []


async def test_answers_are_checked_before_the_write_transaction(
        client, runtime, agent, responder, monkeypatch):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    question = (await ask(client, agent, response_schema=schema)).json()
    approval = (await ask(client, agent, kind="approval", response_schema=schema,
                          proposal={"n": 1})).json()
    writing = []
    checked_while_writing = []
    real_write, checker = runtime.store.write, runtime.tickets._schemas
    real_validate = checker.validate

    @contextmanager
    def write():
        writing.append(True)
        try:
            with real_write() as uow:
                yield uow
        finally:
            writing.pop()

    def validate(*args, **kwargs):
        checked_while_writing.append(bool(writing))
        return real_validate(*args, **kwargs)

    monkeypatch.setattr(runtime.store, "write", write)
    monkeypatch.setattr(checker, "validate", validate)
    answered = await client.post(f"/api/v1/tickets/{question['id']}/answer",
                                 json={"data": {"n": 2}}, headers=responder)
    approved = await client.post(f"/api/v1/tickets/{approval['id']}/approve",
                                 json={"edited": {"n": 3}}, headers=responder)
    assert answered.status_code == 200 and approved.status_code == 200
    assert checked_while_writing == [False, False]


async def test_costly_checks_run_in_a_worker_process_with_the_same_outcome(
        client, runtime, agent, responder):
    fan_out = {"$defs": {"t": {"properties": {"a": {"allOf": [{"$ref": "#/$defs/t"}] * 2}}}},
               "$ref": "#/$defs/t"}
    value: dict = {}
    for _ in range(40):
        value = {"a": value}
    ticket = (await ask(client, agent, response_schema=fan_out)).json()
    costly = await client.post(f"/api/v1/tickets/{ticket['id']}/answer",
                               json={"data": value}, headers=responder)
    assert costly.status_code == 422 and costly.json()["field"] == "data"
    assert "steps" in costly.json()["detail"]
    many = {"type": "array", "items": {"type": "object", "required": ["n"],
                                       "properties": {"n": {"type": "integer"}}}}
    ticket = (await ask(client, agent, response_schema=many)).json()
    bad = await client.post(f"/api/v1/tickets/{ticket['id']}/answer",
                            json={"data": [{"n": n} for n in range(2_000)] + [{"n": "x"}]},
                            headers=responder)
    assert bad.status_code == 422 and bad.json()["field"] == "data.2000.n"
    good = await client.post(f"/api/v1/tickets/{ticket['id']}/answer",
                             json={"data": [{"n": n} for n in range(2_000)]}, headers=responder)
    assert good.status_code == 200
    assert runtime.schema_workers is not None and runtime.schema_workers._pool is not None
