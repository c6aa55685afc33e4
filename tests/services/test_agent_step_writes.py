"""``StepWriter.write``: one transaction takes any mix of step inputs and in-hub replies;
an item that can not be written gets its error in its place and changes nothing, while
the others in the same call are stored."""

from __future__ import annotations

from typing import Any

import pytest

from tickethub.domain.actors import Actor, ActorKind, Role
from tickethub.domain.visibility import READ_ALL
from tickethub.errors import Conflict, Forbidden, NotFound
from tickethub.server.runtime import HubRuntime
from tickethub.services.agent_step_writes import PostedStep, StepInput, StepReply, StepWriter
from tickethub.services.agent_tasks import AgentTaskService, StepView, TaskView
from tickethub.store.ap_records import SqlApStore
from tickethub.testing import RecordingNotifier

OWNER = Actor("agent-1", Role.AGENT, ActorKind.AGENT)
# Reads every task (so a refusal is 403, not the 404 of a task it may not read) but
# owns none.
STRANGER = Actor("agent-2", Role.AGENT, ActorKind.AGENT, scopes=frozenset({READ_ALL}))
PERSON = Actor("alice", Role.RESPONDER, ActorKind.PERSON)
WORKER = Actor("ap-worker", Role.RESPONDER, ActorKind.AGENT)


class Door:
    """The door's task service and step writer on the hub's store."""

    def __init__(self, runtime: HubRuntime) -> None:
        self.runtime = runtime
        self.notified = RecordingNotifier()
        store = SqlApStore(runtime.store)
        self.tasks = AgentTaskService(store, runtime.clock, self.notified)
        self.writer = StepWriter(store, runtime.clock, self.notified)

    def task(self, text: str) -> TaskView:
        return self.tasks.create(OWNER, text, None)

    def messages(self, view: TaskView) -> list[tuple[str, str, str]]:
        return [(m.author, m.via, m.body)
                for m in self.runtime.tickets.messages(view.ticket.id)]

    def step_ids(self, view: TaskView) -> list[str]:
        return [s.state.step_id for s in self.tasks.steps(view.record.task_id)[1]]

    def last_seq(self) -> int:
        with self.runtime.store.read() as uow:
            return uow.events.last_seq()


@pytest.fixture
def door(runtime: HubRuntime) -> Door:
    return Door(runtime)


def _input(actor: Actor, task_id: str, text: str, extra: dict[str, Any] | None = None
           ) -> StepInput:
    return StepInput(actor=actor, task_id=task_id, text=text, additional_input=extra)


def test_a_mixed_batch_stores_the_good_items_and_only_those(door: Door,
                                                          runtime: HubRuntime) -> None:
    mine, theirs, finished = door.task("mine"), door.task("theirs"), door.task("finished")
    other = door.task("other")
    [earlier] = door.writer.write([_input(OWNER, theirs.record.task_id, "earlier step")])
    assert isinstance(earlier, PostedStep)
    runtime.tickets.answer(PERSON, finished.ticket.id, "all done", None, "api")
    before = {v.record.task_id: door.messages(v) for v in (mine, theirs, finished, other)}
    finished_steps = door.step_ids(finished)
    seq = door.last_seq()
    door.notified.calls.clear()

    results = door.writer.write([
        _input(OWNER, mine.record.task_id, "good step", {"n": 1}),
        _input(OWNER, "no-such-task", "lost"),
        _input(OWNER, finished.record.task_id, "too late"),
        _input(STRANGER, mine.record.task_id, "not my task"),
        StepReply(WORKER, earlier, "the reply", "hosted-worker", {"ok": True}),
        _input(PERSON, other.record.task_id, "a responder may post anywhere"),
    ])

    good, unknown, late, forbidden, reply, by_person = results
    assert isinstance(unknown, NotFound) and unknown.field == "task_id"
    assert isinstance(late, Conflict) and late.field == "task_id"
    assert isinstance(forbidden, Forbidden)
    assert isinstance(good, PostedStep) and isinstance(by_person, PostedStep)
    assert (good.step.task_id, good.step.input, good.step.additional_input) == (
        mine.record.task_id, "good step", {"n": 1})
    assert good.ticket.id == mine.ticket.id
    assert isinstance(reply, StepView)
    assert reply.state.step_id == earlier.step.step_id
    assert (reply.state.status, reply.state.output) == ("completed", "the reply")
    assert reply.state.additional_output == {"replied_by": "ap-worker", "via": "hosted-worker",
                                             "data": {"ok": True}}

    # The failed items left no trace: no message, no step, nothing on the finished task.
    assert door.messages(mine) == [*before[mine.record.task_id],
                                   ("agent-1", "agent-protocol", "good step")]
    assert door.messages(finished) == before[finished.record.task_id]
    assert door.step_ids(finished) == finished_steps
    assert door.step_ids(mine) == [good.step.step_id]
    assert door.messages(theirs) == [*before[theirs.record.task_id],
                                     ("ap-worker", "hosted-worker", "the reply")]
    assert door.messages(other) == [*before[other.record.task_id],
                                    ("alice", "agent-protocol", "a responder may post anywhere")]
    assert door.step_ids(other) == [by_person.step.step_id]

    # One commit: three messages, three events; waiters of the touched tickets woken once.
    assert door.last_seq() == seq + 3
    [(notified_seq, woken)] = door.notified.calls
    assert notified_seq == seq + 3
    assert sorted(woken) == sorted({mine.ticket.id, theirs.ticket.id, other.ticket.id})

    _, stored = door.tasks.step(theirs.record.task_id, earlier.step.step_id)
    assert (stored.state.status, stored.state.output) == ("completed", "the reply")


def test_a_batch_of_only_refused_items_writes_nothing(door: Door, runtime: HubRuntime
                                                      ) -> None:
    mine, finished = door.task("mine"), door.task("finished")
    runtime.tickets.answer(PERSON, finished.ticket.id, "done", None, "api")
    before = door.messages(mine), door.messages(finished)
    seq = door.last_seq()
    door.notified.calls.clear()

    results = door.writer.write([
        _input(OWNER, "nope", "x"),
        _input(STRANGER, mine.record.task_id, "x"),
        _input(OWNER, finished.record.task_id, "x"),
    ])

    assert [type(r) for r in results] == [NotFound, Forbidden, Conflict]
    assert (door.messages(mine), door.messages(finished)) == before
    assert door.step_ids(mine) == [] and door.step_ids(finished) == []
    assert door.last_seq() == seq
    assert door.notified.calls == []


def test_a_reply_written_before_a_new_step_in_one_batch_does_not_answer_that_step(
    door: Door
) -> None:
    """A batch is stored in the order of its items: a worker's reply to step 1 that
    was queued before the client's step 2 lands before step 2, so it answers step 1
    only (a reply answers the steps still waiting when it lands)."""
    task = door.task("t")
    [first] = door.writer.write([_input(OWNER, task.record.task_id, "step 1")])
    assert isinstance(first, PostedStep)

    reply, second = door.writer.write([
        StepReply(WORKER, first, "reply to step 1", "hosted-worker"),
        _input(OWNER, task.record.task_id, "step 2"),
    ])

    assert isinstance(reply, StepView) and isinstance(second, PostedStep)
    assert door.messages(task) == [("agent-1", "agent-protocol", "step 1"),
                                   ("ap-worker", "hosted-worker", "reply to step 1"),
                                   ("agent-1", "agent-protocol", "step 2")]
    _, step_1 = door.tasks.step(task.record.task_id, first.step.step_id)
    _, step_2 = door.tasks.step(task.record.task_id, second.step.step_id)
    assert (step_1.state.status, step_1.state.output) == ("completed", "reply to step 1")
    assert (step_2.state.status, step_2.state.output) == ("running", None)


def test_a_reply_is_on_the_record_with_its_data_in_thread_and_event(
        door: Door, runtime: HubRuntime) -> None:
    view = door.task("tally")
    [posted] = door.writer.write([_input(OWNER, view.record.task_id, "count them")])
    assert isinstance(posted, PostedStep)
    seq = door.last_seq()
    door.writer.write([StepReply(WORKER, posted, "3 found", "hosted-worker", {"n": 3})])
    [message] = [m for m in runtime.tickets.messages(view.ticket.id)
                 if m.author == "ap-worker"]
    assert message.data == {"n": 3}
    [event] = runtime.events.since(seq)
    assert event.data["message_id"] == message.id and event.data["data"] == {"n": 3}


def test_a_data_only_answer_completes_the_step_with_its_data_and_no_text(
        door: Door, runtime: HubRuntime) -> None:
    view = door.task("pick one")
    [posted] = door.writer.write([_input(OWNER, view.record.task_id, "which?")])
    assert isinstance(posted, PostedStep)
    runtime.tickets.answer(PERSON, view.ticket.id, None, {"pick": "b"}, "web")
    _, stored = door.tasks.step(view.record.task_id, posted.step.step_id)
    assert (stored.state.status, stored.state.output) == ("completed", None)
    assert stored.state.additional_output is not None
    assert stored.state.additional_output["data"] == {"pick": "b"}
