"""The in-hub Agent Protocol worker (``ap_worker``): the door hands each new step straight
to a handler inside the hub; its reply completes the step, a ``Reply(last=True)`` ends
the task, a handler without a reply leaves the step to a person, and steps left
unanswered while no worker ran are taken when the hub starts with one."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from bench.bait_server import BaitServer
from sqlalchemy import select

from tests.agents import handlers
from tests.conftest import make_token
from tickethub.agents.task_worker import load_handler
from tickethub.api.app import create_app
from tickethub.server.runtime import HubRuntime
from tickethub.services.agent_tasks import AgentTaskService
from tickethub.settings import Settings
from tickethub.store.ap_records import SqlApStore
from tickethub.store.ap_tables import ap_steps

AP = "/ap/v1/agent/tasks"
WORKER = "tests.agents.handlers:handle"
SHORT_HOLD = 0.2
LEASE = 2.0  # the in-hub worker's claims, shortened (renewed every 0.67 s)
DEAD_LEASE = 3.0  # a claim left by a hub that died


def _without_worker(settings: Settings) -> HubRuntime:
    """A hub on the same database with no in-hub worker: its steps wait, running."""
    return HubRuntime(settings.model_copy(update={"ap_worker": None,
                                                  "ap_step_hold_seconds": SHORT_HOLD}))


def _claim(hub: HubRuntime, step_id: str) -> object:
    """The step's ``claimed_until`` as stored (None: nobody holds it)."""
    with hub.store.read() as uow:
        return uow.connection.execute(select(ap_steps.c.claimed_until).where(
            ap_steps.c.step_id == step_id)).scalar_one()


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """A hub whose AP door runs ``handlers.handle``; a hold long enough that a quick
    reply always lands within it (tests that want ``running`` shorten it)."""
    return settings.model_copy(update={"ap_worker": WORKER, "ap_step_hold_seconds": 10.0})


@asynccontextmanager
async def serving(hub: HubRuntime) -> AsyncIterator[httpx.AsyncClient]:
    """The hub's app with its whole lifespan running (the worker's catch-up and stop),
    and a client bound to it."""
    app = create_app(hub)
    started, stop = asyncio.Event(), asyncio.Event()

    async def lifespan() -> None:
        # In a task of its own, as a server runs it: the lifespan holds task groups that
        # must end in the task they began in (fixture setup and teardown are two tasks).
        async with app.router.lifespan_context(app):
            started.set()
            await stop.wait()

    runner = asyncio.create_task(lifespan())
    waiting = asyncio.create_task(started.wait())
    await asyncio.wait({runner, waiting}, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if runner.done():
        runner.result()  # startup failed: raise its error
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hub") as c:
            yield c
    finally:
        stop.set()
        await runner


@pytest.fixture
async def client(runtime: HubRuntime) -> AsyncIterator[httpx.AsyncClient]:
    async with serving(runtime) as c:
        yield c


async def _task(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await client.post(AP, json=body)
    assert response.status_code == 200, response.text
    return response.json()


async def _step(client: httpx.AsyncClient, task_id: str, **body: Any) -> dict[str, Any]:
    response = await client.post(f"{AP}/{task_id}/steps", json=body)
    assert response.status_code == 200, response.text
    return response.json()


async def _ticket(client: httpx.AsyncClient, task_id: str, headers: dict[str, str]
                  ) -> dict[str, Any]:
    """The ticket behind an AP task, found by its ref."""
    response = await client.get("/api/v1/tickets", params={"ref": f"ap_task_id={task_id}"},
                                headers=headers)
    [ticket] = response.json()["items"]
    return ticket


async def _completed(client: httpx.AsyncClient, task_id: str, step_id: str,
                     seconds: float = 15) -> dict[str, Any]:
    """The step once a GET shows it completed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        step = (await client.get(f"{AP}/{task_id}/steps/{step_id}")).json()
        if step["status"] == "completed" or loop.time() > deadline:
            return step
        await asyncio.sleep(0.02)


async def _messages(client: httpx.AsyncClient, ticket_id: int, headers: dict[str, str]
                    ) -> list[dict[str, Any]]:
    response = await client.get(f"/api/v1/tickets/{ticket_id}/messages", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_str_reply_completes_the_step_at_once_and_the_task_goes_on(
    client: httpx.AsyncClient, responder: dict[str, str]
) -> None:
    task = await _task(client, input="paint", additional_input={"room": "hall"})
    step = await _step(client, task["task_id"], input="hello", additional_input={"n": 1})
    assert step["status"] == "completed"
    assert step["output"] == ("echo: hello (task: paint, extra: {'n': 1}, "
                              "task extra: {'room': 'hall'})")
    assert step["is_last"] is False
    assert step["additional_output"]["replied_by"] == "ap-worker"
    assert step["additional_output"]["via"] == "hosted-worker"
    got = (await client.get(f"{AP}/{task['task_id']}/steps/{step['step_id']}")).json()
    assert got == step

    ticket = await _ticket(client, task["task_id"], responder)
    assert ticket["status"] in ("open", "in_progress")
    assert [(m["author"], m["via"], m["body"]) for m in
            await _messages(client, ticket["id"], responder)] == [
        ("ap-client", "agent-protocol", "hello"), ("ap-worker", "hosted-worker", step["output"])]
    again = await _step(client, task["task_id"], input="again")
    assert again["status"] == "completed"
    assert again["output"].startswith("echo: again ")


async def test_the_worker_name_is_the_replier(runtime: HubRuntime) -> None:
    runtime.settings.ap_worker_name = "painter-bot"
    async with serving(runtime) as client:
        task = await _task(client, input="t")
        step = await _step(client, task["task_id"], input="hi")
    assert step["additional_output"]["replied_by"] == "painter-bot"


async def test_a_last_reply_answers_the_ticket_and_ends_the_task(
    client: httpx.AsyncClient, responder: dict[str, str]
) -> None:
    task = await _task(client, input="paint")
    step = await _step(client, task["task_id"], input="finish")
    assert step["status"] == "completed"
    assert step["output"] == "all done"
    assert step["is_last"] is True
    assert step["additional_output"]["replied_by"] == "ap-worker"
    assert step["additional_output"]["via"] == "hosted-worker"
    assert step["additional_output"]["data"] == {"score": 3, "tags": ["a", "b"]}

    ticket = await _ticket(client, task["task_id"], responder)
    assert ticket["status"] == "answered"
    assert ticket["answer"]["text"] == "all done"
    assert ticket["answer"]["data"] == {"score": 3, "tags": ["a", "b"]}
    assert (ticket["answer"]["by"], ticket["answer"]["via"]) == ("ap-worker", "hosted-worker")


async def test_a_step_to_a_finished_task_is_409_and_changes_nothing(
    client: httpx.AsyncClient, responder: dict[str, str]
) -> None:
    task = await _task(client, input="paint")
    await _step(client, task["task_id"], input="finish")
    ticket = await _ticket(client, task["task_id"], responder)
    before_steps = (await client.get(f"{AP}/{task['task_id']}/steps")).json()
    before_messages = await _messages(client, ticket["id"], responder)

    late = await client.post(f"{AP}/{task['task_id']}/steps", json={"input": "more"})
    assert late.status_code == 409
    assert late.json()["code"] == "conflict"
    assert late.json()["field"] == "task_id"
    assert (await client.get(f"{AP}/{task['task_id']}/steps")).json() == before_steps
    assert await _messages(client, ticket["id"], responder) == before_messages
    assert (await _ticket(client, task["task_id"], responder))["version"] == ticket["version"]


@pytest.mark.parametrize("step_input", ["silent", "boom"])
async def test_without_a_reply_the_step_waits_for_a_person(
    client: httpx.AsyncClient, responder: dict[str, str], runtime: HubRuntime,
    step_input: str
) -> None:
    """A handler that returns None or raises leaves the step running; a person's reply
    through the native API completes it."""
    runtime.settings.ap_step_hold_seconds = SHORT_HOLD
    task = await _task(client, input="paint")
    step = await _step(client, task["task_id"], input=step_input)
    assert step["status"] == "running"
    assert step["output"] is None
    ticket = await _ticket(client, task["task_id"], responder)
    assert step["additional_output"]["waiting_for_human"]["ticket_id"] == ticket["id"]
    await asyncio.sleep(0.3)  # the handler is long done: still nothing
    still = (await client.get(f"{AP}/{task['task_id']}/steps/{step['step_id']}")).json()
    assert still["status"] == "running"
    assert [m["author"] for m in await _messages(client, ticket["id"], responder)] == [
        "ap-client"]

    posted = await client.post(f"/api/v1/tickets/{ticket['id']}/messages",
                               json={"body": "done by hand"}, headers=responder)
    assert posted.status_code == 201, posted.text
    done = await _completed(client, task["task_id"], step["step_id"])
    assert done["status"] == "completed"
    assert done["output"] == "done by hand"
    assert done["additional_output"]["replied_by"] == "alice"
    assert done["is_last"] is False


async def test_a_person_answering_a_silent_step_ends_the_task(
    client: httpx.AsyncClient, responder: dict[str, str], runtime: HubRuntime
) -> None:
    runtime.settings.ap_step_hold_seconds = SHORT_HOLD
    task = await _task(client, input="paint")
    step = await _step(client, task["task_id"], input="silent")
    ticket = await _ticket(client, task["task_id"], responder)
    answered = await client.post(f"/api/v1/tickets/{ticket['id']}/answer",
                                 json={"text": "handled"}, headers=responder)
    assert answered.status_code == 200, answered.text
    done = await _completed(client, task["task_id"], step["step_id"])
    assert (done["status"], done["output"], done["is_last"]) == ("completed", "handled", True)


async def test_a_handler_slower_than_the_hold_completes_the_step_later(
    client: httpx.AsyncClient, runtime: HubRuntime
) -> None:
    runtime.settings.ap_step_hold_seconds = SHORT_HOLD
    task = await _task(client, input="paint")
    step = await _step(client, task["task_id"], input="slow")
    assert step["status"] == "running"
    assert step["output"] is None
    done = await _completed(client, task["task_id"], step["step_id"])
    assert done["status"] == "completed"
    assert done["output"] == "slow done"
    assert done["additional_output"]["replied_by"] == "ap-worker"
    assert done["step_id"] == step["step_id"]


async def test_an_attached_file_is_an_artifact_of_the_step(client: httpx.AsyncClient) -> None:
    task = await _task(client, input="paint")
    step = await _step(client, task["task_id"], input="attach")
    assert step["status"] == "completed"
    [artifact] = step["artifacts"]
    assert step["output"] == f"attached {artifact['artifact_id']}"
    assert (artifact["file_name"], artifact["relative_path"], artifact["agent_created"]) == (
        "report.txt", "out", True)
    content = await client.get(f"{AP}/{task['task_id']}/artifacts/{artifact['artifact_id']}")
    assert content.status_code == 200
    assert content.content == b"the report"
    listed = (await client.get(f"{AP}/{task['task_id']}/artifacts")).json()
    assert [a["artifact_id"] for a in listed["artifacts"]] == [artifact["artifact_id"]]


async def test_ask_opens_a_child_question_and_the_reply_uses_its_answer(
    client: httpx.AsyncClient, responder: dict[str, str], runtime: HubRuntime
) -> None:
    runtime.settings.ap_step_hold_seconds = SHORT_HOLD
    task = await _task(client, input="paint")
    step = await _step(client, task["task_id"], input="ask")
    assert step["status"] == "running"  # the handler waits for a person
    ticket = await _ticket(client, task["task_id"], responder)

    children: list[dict[str, Any]] = []
    for _ in range(500):
        children = (await client.get("/api/v1/tickets", params={"parent_id": ticket["id"]},
                                     headers=responder)).json()["items"]
        if children:
            break
        await asyncio.sleep(0.02)
    [child] = children
    assert (child["kind"], child["title"], child["body"], child["status"]) == (
        "question", "Which color?", "for the painting", "open")
    assert child["created_by"] == "ap-worker"
    tree = (await client.get(f"/api/v1/tickets/{ticket['id']}/tree", headers=responder)).json()
    assert [c["ticket"]["id"] for c in tree["children"]] == [child["id"]]

    answered = await client.post(f"/api/v1/tickets/{child['id']}/answer",
                                 json={"text": "blue"}, headers=responder)
    assert answered.status_code == 200, answered.text
    done = await _completed(client, task["task_id"], step["step_id"])
    assert done["status"] == "completed"
    assert done["output"] == "color is blue (answered)"
    assert done["is_last"] is False


async def test_at_most_ap_worker_concurrency_handlers_run_at_once(
    runtime: HubRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime.settings.ap_worker_concurrency = 1
    monkeypatch.setattr(handlers, "peak", 0)
    async with serving(runtime) as client:
        tasks = [await _task(client, input=f"t{i}") for i in range(3)]
        steps = await asyncio.gather(*(_step(client, t["task_id"], input="overlap")
                                       for t in tasks))
    assert [s["output"] for s in steps] == ["overlapped"] * 3
    assert handlers.peak == 1


async def test_at_start_the_worker_takes_steps_left_unanswered(settings: Settings) -> None:
    """A step posted while the hub ran without a worker is handled when the hub starts
    again on the same database with one."""
    without = _without_worker(settings)
    try:
        async with serving(without) as client:
            task = await _task(client, input="paint", additional_input={"room": "hall"})
            step = await _step(client, task["task_id"], input="left", additional_input={"n": 2})
            assert step["status"] == "running"
            await asyncio.sleep(0.3)
            still = (await client.get(f"{AP}/{task['task_id']}/steps/{step['step_id']}"))
            assert still.json()["status"] == "running"
    finally:
        without.close()

    hub = HubRuntime(settings)
    try:
        async with serving(hub) as client:
            done = await _completed(client, task["task_id"], step["step_id"])
            assert done["status"] == "completed"
            assert done["output"] == ("echo: left (task: paint, extra: {'n': 2}, "
                                      "task extra: {'room': 'hall'})")
            assert done["additional_output"]["replied_by"] == "ap-worker"
            assert done["additional_output"]["via"] == "hosted-worker"
            admin_headers = await make_token(client, "responder", "carol")
            ticket = await _ticket(client, task["task_id"], admin_headers)
            replies = [m for m in await _messages(client, ticket["id"], admin_headers)
                       if m["author"] == "ap-worker"]
            assert len(replies) == 1  # taken once, not again by the step post or a GET
    finally:
        hub.close()


async def test_at_start_a_step_a_person_already_answered_is_left_alone(
    settings: Settings
) -> None:
    without = _without_worker(settings)
    try:
        async with serving(without) as client:
            person = await make_token(client, "responder", "alice")
            task = await _task(client, input="paint")
            step = await _step(client, task["task_id"], input="answered by alice")
            ticket = await _ticket(client, task["task_id"], person)
            reply = await client.post(f"/api/v1/tickets/{ticket['id']}/messages",
                                      json={"body": "done"}, headers=person)
            assert reply.status_code == 201
    finally:
        without.close()

    hub = HubRuntime(settings)
    try:
        async with serving(hub) as client:
            await asyncio.sleep(0.3)
            got = (await client.get(f"{AP}/{task['task_id']}/steps/{step['step_id']}")).json()
            assert (got["status"], got["output"]) == ("completed", "done")
            authors = [m["author"] for m in await _messages(client, ticket["id"], person)]
            assert authors == ["ap-client", "alice"]
    finally:
        hub.close()


async def test_two_hubs_starting_on_one_database_hand_a_left_step_to_one_worker(
        settings: Settings) -> None:
    """``serve --workers N``: every process's worker catches up at its start; a step left
    running is claimed by one of them (a conditional update), so it is handled once."""
    without = _without_worker(settings)
    try:
        async with serving(without) as client:
            task = await _task(client, input="paint")
            step = await _step(client, task["task_id"], input="hold")
            assert step["status"] == "running"
    finally:
        without.close()

    first = HubRuntime(settings)
    second = HubRuntime(settings.model_copy(update={"data_dir": settings.data_dir / "two"}))
    try:
        async with serving(first) as client, serving(second):
            # Both caught up while the first's handler holds the step (HOLD_SECONDS).
            done = await _completed(client, task["task_id"], step["step_id"])
            assert done["output"] == "held"
            await asyncio.sleep(handlers.HOLD_SECONDS)  # a second handler would reply now
            person = await make_token(client, "responder", "carol")
            ticket = await _ticket(client, task["task_id"], person)
            replies = [m for m in await _messages(client, ticket["id"], person)
                       if m["author"] == "ap-worker"]
            assert len(replies) == 1
    finally:
        first.close()
        second.close()


async def test_a_step_a_hub_is_handling_stays_its_own_while_another_hub_runs(
        settings: Settings) -> None:
    """A step whose handler outlasts the client's hold is stored claimed, and the claim
    is renewed while the handler runs: another hub on the same database, starting
    meanwhile and looking for lapsed claims every third of a (short) lease, never takes
    it. Once handled, the claim is given up."""
    quick = settings.model_copy(update={"ap_step_hold_seconds": SHORT_HOLD,
                                        "ap_worker_lease_seconds": LEASE})
    first = HubRuntime(quick)
    second = HubRuntime(quick.model_copy(update={"data_dir": settings.data_dir / "two"}))
    try:
        async with serving(first) as client:
            task = await _task(client, input="paint")
            step = await _step(client, task["task_id"], input="hold")
            assert step["status"] == "running"
            assert _claim(first, step["step_id"]) is not None  # claimed as it was stored
            async with serving(second):
                done = await _completed(client, task["task_id"], step["step_id"])
                assert done["output"] == "held"
                await asyncio.sleep(handlers.HOLD_SECONDS)  # a second handler replies now
                person = await make_token(client, "responder", "carol")
                ticket = await _ticket(client, task["task_id"], person)
                replies = [m for m in await _messages(client, ticket["id"], person)
                           if m["author"] == "ap-worker"]
                assert len(replies) == 1
                assert _claim(first, step["step_id"]) is None
    finally:
        first.close()
        second.close()


async def test_a_step_whose_hub_died_is_taken_once_its_claim_lapses(
        settings: Settings) -> None:
    """A hub killed mid-handler leaves its claim; a running hub takes the step once the
    claim lapses, not before."""
    without = _without_worker(settings)
    try:
        async with serving(without) as client:
            task = await _task(client, input="paint")
            step = await _step(client, task["task_id"], input="left")
            # The process handling the step dies here, holding its claim.
            tasks = AgentTaskService(SqlApStore(without.store), without.clock, without.bus)
            assert tasks.claim_steps([step["step_id"]], DEAD_LEASE) == {step["step_id"]}
            lapses = time.monotonic() + DEAD_LEASE
    finally:
        without.close()

    hub = HubRuntime(settings.model_copy(update={"ap_worker_lease_seconds": LEASE}))
    try:
        async with serving(hub) as client:
            done = await _completed(client, task["task_id"], step["step_id"],
                                    seconds=DEAD_LEASE + 15)
            assert time.monotonic() >= lapses  # not at start: the dead hub's claim held
            assert done["status"] == "completed"
            assert done["output"].startswith("echo: left")
    finally:
        hub.close()


def test_load_handler_gives_the_named_callable() -> None:
    assert load_handler(WORKER) is handlers.handle


@pytest.mark.parametrize("spec", [
    "tests.agents.no_such_module:handle",
    "tests.agents.handlers:no_such_function",
    "tests.agents.handlers:not_callable",
])
def test_a_bad_ap_worker_spec_is_a_clear_value_error(spec: str) -> None:
    with pytest.raises(ValueError, match="ap_worker") as raised:
        load_handler(spec)
    assert spec.split(":")[0] in str(raised.value)


async def test_a_hub_with_a_bad_ap_worker_fails_to_start(settings: Settings) -> None:
    hub = HubRuntime(settings.model_copy(update={"ap_worker": "tests.agents.nope:handle"}))
    try:
        with pytest.raises(ValueError, match="ap_worker"):
            async with serving(hub):
                pass
    finally:
        hub.close()


async def test_a_schema_from_an_ap_client_with_a_remote_ref_is_refused_unfetched(client):
    """A step's ``additional_input`` carries a schema the handler asks a person with: a
    remote ``$ref`` in it is the client's 422 naming the place, and nothing is fetched."""
    task = await _task(client, input="pick")
    with BaitServer() as bait:
        schema = {"type": "object", "properties": {"x": {"$ref": bait.url()}}}
        response = await client.post(f"{AP}/{task['task_id']}/steps", json={
            "input": "ask with schema", "additional_input": {"schema": schema}})
        assert response.status_code == 422, response.text
        assert response.json()["field"] == "response_schema.properties.x.$ref"
    assert bait.requests == []
