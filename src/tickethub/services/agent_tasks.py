"""Agent Protocol use cases: a task is a ticket (kind ``task``), a step is one turn on it.

* ``create`` opens the ticket and its task row in one transaction; the AP id and every
  scalar top-level ``additional_input`` key go into the ticket's indexed refs
  (``ap_task_id``, ``ap_input.<key>``), so tasks are found by an outside id and filtered
  by e.g. ``app_id``. ``input`` and ``additional_input`` are also kept exactly as sent.
* ``post_step`` posts the step's input as a message on the ticket, for whoever is
  assigned (a person through any channel, or an agent worker) to reply to. A step can
  not be posted to a resolved ticket: ``Conflict``, and nothing changes.
* Step states are derived from the ticket's messages (``agent_steps.derive``).

Waiting for the reply is the door's job (it owns the event loop); this module is sync
and thread-safe, one transaction per call.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from tickethub.domain.actors import Actor, require_owner_or_responder
from tickethub.domain.events import EventType, NewEvent
from tickethub.domain.messages import Message, MessageDraft, MessageKind
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket, TicketDraft
from tickethub.errors import Conflict, NotFound, TickethubError
from tickethub.services.agent_steps import (
    AP_CHANNEL,
    StepRecord,
    StepState,
    derive,
    state_of,
)
from tickethub.services.ports import Clock, Notifier, UnitOfWork

REF_TASK = "ap_task_id"
REF_INPUT = "ap_input."
DEFAULT_TITLE = "Agent Protocol task"
EMPTY_STEP_BODY = "(next step, no input)"
_TITLE_MAX = 200
SMALL_STEP = 2000  # characters of input (and of additional_input as JSON) put in the event
_REF_KEY_MAX = 100 - len(REF_INPUT)


@dataclass(frozen=True, slots=True)
class TaskRecord:
    task_id: str
    ticket_id: int
    input: str | None
    additional_input: dict[str, Any] | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ArtifactRecord:
    artifact_id: str
    task_id: str
    step_id: str | None
    agent_created: bool
    file_name: str
    relative_path: str | None
    size: int
    storage_key: str
    created_by: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class TaskInput:
    """A task to create: who asks, and the body of ``POST /ap/v1/agent/tasks``."""

    actor: Actor
    text: str | None
    additional_input: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class StepInput:
    """A step to post: who posts it, to which task, and the body of ``POST .../steps``."""

    actor: Actor
    task_id: str
    text: str | None
    additional_input: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class PostedStep:
    """A stored step, with its task and the task's ticket as they were."""

    step: StepRecord
    task: TaskRecord
    ticket: Ticket


@dataclass(frozen=True, slots=True)
class StepReply:
    """A reply to a step, by an agent worker that runs inside the hub."""

    actor: Actor
    posted: PostedStep
    text: str
    via: str
    data: Any = None


@dataclass(frozen=True, slots=True)
class TaskFilter:
    """Extension filters of the task list: ticket status, a label, additional_input keys."""

    status: tuple[Status, ...] = ()
    label: str | None = None
    inputs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class StepView:
    state: StepState
    task_id: str
    artifacts: list[ArtifactRecord] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TaskView:
    record: TaskRecord
    ticket: Ticket
    artifacts: list[ArtifactRecord]
    steps: list[StepView] | None = None


class ApRepository(Protocol):
    def add_tasks(self, records: Sequence[TaskRecord]) -> None: ...
    def get_task(self, task_id: str) -> TaskRecord | None: ...
    def list_tasks(self, filters: TaskFilter, offset: int, limit: int
                   ) -> tuple[list[TaskRecord], int]:
        """One page of tasks, oldest first, and the total that match."""
        ...
    def add_steps(self, records: Sequence[StepRecord]) -> None: ...
    def get_tasks(self, task_ids: Sequence[str]) -> dict[str, TaskRecord]: ...
    def steps(self, task_ids: Sequence[str]) -> list[StepRecord]:
        """Steps of these tasks, oldest first."""
        ...
    def latest_step(self, task_id: str) -> StepRecord | None: ...
    def get_step(self, task_id: str, step_id: str) -> StepRecord | None: ...
    def task_ticket(self, task_id: str) -> Ticket | None:
        """The ticket of the task, in one read."""
        ...
    def first_reply(self, ticket_id: int, task_id: str, after_message_id: int,
                    creator: str) -> Message | None:
        """The first message after ``after_message_id`` that ``agent_steps.is_reply``
        accepts (trusted, not by ``creator``, not a step input of the task)."""
        ...
    def step_artifacts(self, step_id: str) -> list[ArtifactRecord]: ...
    def artifacts_of_steps(self, step_ids: Sequence[str]) -> list[ArtifactRecord]: ...
    def add_artifact(self, record: ArtifactRecord) -> None: ...
    def artifacts(self, task_ids: Sequence[str]) -> list[ArtifactRecord]: ...
    def artifact_page(self, task_id: str, offset: int, limit: int
                      ) -> tuple[list[ArtifactRecord], int]: ...
    def get_artifact(self, task_id: str, artifact_id: str) -> ArtifactRecord | None: ...
    def messages(self, ticket_ids: Sequence[int]) -> list[Message]: ...
    def tickets(self, ticket_ids: Sequence[int], *, for_update: bool = False
                ) -> list[Ticket]:
        """These tickets (locked for this transaction with ``for_update``)."""
        ...


class ApUnitOfWork(UnitOfWork, Protocol):
    ap: ApRepository


class ApStore(Protocol):
    def write(self) -> AbstractContextManager[ApUnitOfWork]: ...
    def read(self) -> AbstractContextManager[ApUnitOfWork]: ...


def _raise_or(result: Any) -> Any:
    if isinstance(result, TickethubError):
        raise result
    return result


def _open_task(tasks: dict[str, TaskRecord], tickets: dict[int, Ticket], item: StepInput
               ) -> tuple[TaskRecord, Ticket]:
    """The task and its ticket, if ``item``'s actor may post a step to it now."""
    task = tasks.get(item.task_id)
    if task is None:
        raise NotFound(f"task {item.task_id} does not exist", field="task_id")
    ticket = tickets[task.ticket_id]
    require_owner_or_responder(item.actor, ticket.created_by, "posting a step")
    if not ticket.waiting:
        raise Conflict(
            f"task {item.task_id} is finished (its ticket is {ticket.status.value}); "
            "no more steps can be posted", field="task_id", ticket_status=ticket.status.value,
        )
    return task, ticket


def _title(text: str | None) -> str:
    first = (text or "").strip().splitlines()[0].strip() if (text or "").strip() else ""
    if not first:
        return DEFAULT_TITLE
    return first if len(first) <= _TITLE_MAX else first[: _TITLE_MAX - 1] + "…"


def ref_value(value: Any) -> str | None:
    """How a scalar ``additional_input`` value is indexed (and how filters match it)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return None


def input_refs(additional_input: dict[str, Any] | None) -> dict[str, str]:
    refs: dict[str, str] = {}
    for key, value in (additional_input or {}).items():
        indexed = ref_value(value)
        if indexed is not None and 0 < len(key) <= _REF_KEY_MAX:
            refs[REF_INPUT + key] = indexed
    return refs


def _small_step(text: str | None, additional_input: dict[str, Any] | None
                ) -> dict[str, Any]:
    """A small step's input, carried in its event so a worker needs no extra read."""
    if len(text or "") > SMALL_STEP or len(json.dumps(additional_input)) > SMALL_STEP:
        return {}
    return {"ap_input": text, "ap_additional_input": additional_input}


class AgentTaskService:
    """Tasks and steps of the Agent Protocol door. Thread-safe: one transaction per call."""

    def __init__(self, store: ApStore, clock: Clock, notifier: Notifier,
                 new_id: Callable[[], str] = lambda: str(uuid.uuid4())) -> None:
        self._store = store
        self._clock = clock
        self._notifier = notifier
        self._new_id = new_id

    # -- tasks ---------------------------------------------------------------------------

    def create(self, actor: Actor, text: str | None,
               additional_input: dict[str, Any] | None) -> TaskView:
        return self.create_many([TaskInput(actor, text, additional_input)])[0]

    def create_many(self, inputs: Sequence[TaskInput]) -> list[TaskView]:
        """Create several tasks in one transaction (group commit): all or none."""
        now = self._clock.now()
        task_ids = [self._new_id() for _ in inputs]
        drafts = [
            (TicketDraft(kind=Kind.TASK, title=_title(item.text), body=item.text or "",
                         refs={REF_TASK: task_id, **input_refs(item.additional_input)}),
             item.actor.name)
            for item, task_id in zip(inputs, task_ids, strict=True)
        ]
        with self._store.write() as uow:
            tickets = uow.tickets.add_many(drafts, now)
            records = [TaskRecord(task_id, ticket.id, item.text, item.additional_input, now)
                       for task_id, ticket, item in zip(task_ids, tickets, inputs, strict=True)]
            uow.ap.add_tasks(records)
            events = uow.events.append_many([
                NewEvent(EventType.TICKET_CREATED, ticket.id, ticket.path, ticket.created_by,
                         {"kind": ticket.kind.value, "title": ticket.title, "parent_id": None,
                          "status": ticket.status.value, REF_TASK: record.task_id})
                for ticket, record in zip(tickets, records, strict=True)
            ], now)
        if events:
            self._notifier.notify(events[-1].seq, tickets)
        return [TaskView(record, ticket, [])
                for record, ticket in zip(records, tickets, strict=True)]

    def get(self, task_id: str, *, with_steps: bool = False) -> TaskView:
        with self._store.read() as uow:
            record = self._task(uow, task_id)
            views = self._views(uow, [record], with_steps)
        return views[0]

    def page(self, filters: TaskFilter, offset: int, limit: int, *,
             with_steps: bool = False) -> tuple[list[TaskView], int]:
        with self._store.read() as uow:
            records, total = uow.ap.list_tasks(filters, offset, limit)
            return self._views(uow, records, with_steps), total

    # -- steps ---------------------------------------------------------------------------

    def post_step(self, actor: Actor, task_id: str, text: str | None,
                  additional_input: dict[str, Any] | None) -> tuple[StepRecord, Ticket]:
        """Post a step's input on the task's ticket; returns the step and the ticket."""
        posted = _raise_or(self.post_steps([StepInput(actor, task_id, text,
                                                       additional_input)])[0])
        return posted.step, posted.ticket

    def post_steps(self, inputs: Sequence[StepInput]) -> list[PostedStep | TickethubError]:
        """Post several steps in one transaction (group commit). A step that can not be
        posted (unknown task, finished task, an actor who may not) gets its error in its
        place and changes nothing; the others are stored."""
        now = self._clock.now()
        results: list[PostedStep | TickethubError | None] = []
        accepted: list[tuple[int, StepInput, TaskRecord, Ticket, bool]] = []
        with self._store.write() as uow:
            tasks = uow.ap.get_tasks(list({i.task_id for i in inputs}))
            tickets = {t.id: t for t in uow.ap.tickets(
                sorted({r.ticket_id for r in tasks.values()}), for_update=True)}
            for item in inputs:
                try:
                    task, ticket = _open_task(tasks, tickets, item)
                except TickethubError as exc:
                    results.append(exc)
                    continue
                trusted = item.actor.can_steer or item.actor.name == ticket.created_by
                accepted.append((len(results), item, task, ticket, trusted))
                results.append(None)  # filled in below
            if not accepted:
                return [r for r in results if r is not None]
            step_ids = [self._new_id() for _ in accepted]
            messages = uow.messages.add_many([
                MessageDraft(ticket.id, item.actor.name, AP_CHANNEL,
                             item.text if item.text and item.text.strip() else EMPTY_STEP_BODY,
                             MessageKind.COMMENT, trusted,
                             data={REF_TASK: item.task_id, "ap_step_id": step_id,
                                   "additional_input": item.additional_input})
                for step_id, (_, item, _, ticket, trusted) in zip(step_ids, accepted,
                                                                  strict=True)], now)
            steps = [StepRecord(step_id, item.task_id, item.text, item.additional_input,
                                message.id, item.actor.name, now)
                     for step_id, message, (_, item, *_) in zip(step_ids, messages, accepted,
                                                                strict=True)]
            uow.ap.add_steps(steps)
            events = uow.events.append_many([
                NewEvent(EventType.MESSAGE_POSTED, ticket.id, ticket.path, item.actor.name,
                         {"message_id": message.id, "via": AP_CHANNEL, "trusted": trusted,
                          REF_TASK: item.task_id, "ap_step_id": step.step_id,
                          **_small_step(item.text, item.additional_input)})
                for step, message, (_, item, _, ticket, trusted)
                in zip(steps, messages, accepted, strict=True)], now)
        for step, (index, _, task, ticket, _) in zip(steps, accepted, strict=True):
            results[index] = PostedStep(step, task, ticket)
        self._notifier.notify(events[-1].seq, list({a[3].id: a[3] for a in accepted}.values()))
        return [r for r in results if r is not None]

    def reply_steps(self, replies: Sequence[StepReply]) -> list[StepView]:
        """Post replies of agent workers running inside the hub (comments, so the task
        goes on) in one transaction, and return each step as it now stands: completed by
        this reply, or by one that landed first."""
        now = self._clock.now()
        with self._store.write() as uow:
            tickets = {t.id: t for t in uow.ap.tickets(
                sorted({r.posted.ticket.id for r in replies}))}
            messages = uow.messages.add_many([
                MessageDraft(r.posted.ticket.id, r.actor.name, r.via, r.text,
                             MessageKind.COMMENT, r.actor.can_steer, data=r.data)
                for r in replies], now)
            events = uow.events.append_many([
                NewEvent(EventType.MESSAGE_POSTED, r.posted.ticket.id, r.posted.ticket.path,
                         r.actor.name, {"message_id": m.id, "via": r.via,
                                        "trusted": m.trusted})
                for r, m in zip(replies, messages, strict=True)], now)
            states = []
            for r in replies:
                step, ticket = r.posted.step, tickets[r.posted.ticket.id]
                reply = uow.ap.first_reply(ticket.id, step.task_id, step.input_message_id,
                                           ticket.created_by)
                newest = False
                if not ticket.waiting:
                    latest = uow.ap.latest_step(step.task_id)
                    newest = latest is not None and latest.step_id == step.step_id
                states.append(state_of(step, reply, ticket, newest))
            completed = [s.step_id for s in states if s.status == "completed"]
            artifacts: dict[str, list[ArtifactRecord]] = {}
            for artifact in uow.ap.artifacts_of_steps(completed) if completed else ():
                artifacts.setdefault(artifact.step_id or "", []).append(artifact)
        self._notifier.notify(events[-1].seq, list(tickets.values()))
        return [StepView(state, state.record.task_id, artifacts.get(state.step_id, []))
                for state in states]

    def steps(self, task_id: str) -> tuple[Ticket, list[StepView]]:
        """The task's ticket and all its steps, oldest first."""
        with self._store.read() as uow:
            record = self._task(uow, task_id)
            view = self._views(uow, [record], True)[0]
        assert view.steps is not None
        return view.ticket, view.steps

    def step(self, task_id: str, step_id: str) -> tuple[Ticket, StepView]:
        """The task's ticket and the step asked for (``NotFound`` for an unknown id).
        Reads only what this step needs, however long the task's history."""
        with self._store.read() as uow:
            ticket = uow.ap.task_ticket(task_id)
            if ticket is None:
                raise NotFound(f"task {task_id} does not exist", field="task_id")
            step = uow.ap.get_step(task_id, step_id)
            if step is None:
                raise NotFound(f"task {task_id} has no step {step_id}", field="step_id")
            reply = uow.ap.first_reply(ticket.id, task_id, step.input_message_id,
                                       ticket.created_by)
            newest = False
            if not ticket.waiting:  # is_last is only ever true on a resolved ticket
                latest = uow.ap.latest_step(task_id)
                newest = latest is not None and latest.step_id == step.step_id
            state = state_of(step, reply, ticket, newest)
            artifacts = (uow.ap.step_artifacts(step_id) if state.status == "completed"
                         else [])
        return ticket, StepView(state, task_id, artifacts)

    # -- internals -----------------------------------------------------------------------

    @staticmethod
    def _task(uow: ApUnitOfWork, task_id: str) -> TaskRecord:
        record = uow.ap.get_task(task_id)
        if record is None:
            raise NotFound(f"task {task_id} does not exist", field="task_id")
        return record

    @staticmethod
    def _views(uow: ApUnitOfWork, records: list[TaskRecord], with_steps: bool
               ) -> list[TaskView]:
        if not records:
            return []
        task_ids = [r.task_id for r in records]
        tickets = {t.id: t for t in uow.ap.tickets([r.ticket_id for r in records])}
        artifacts: dict[str, list[ArtifactRecord]] = {t: [] for t in task_ids}
        for artifact in uow.ap.artifacts(task_ids):
            artifacts[artifact.task_id].append(artifact)
        steps: dict[str, list[StepView]] | None = None
        if with_steps:
            steps = _step_views(uow, records, tickets, artifacts)
        return [
            TaskView(r, tickets[r.ticket_id], artifacts[r.task_id],
                     steps[r.task_id] if steps is not None else None)
            for r in records
        ]


def _step_views(uow: ApUnitOfWork, records: list[TaskRecord], tickets: dict[int, Ticket],
                artifacts: dict[str, list[ArtifactRecord]]) -> dict[str, list[StepView]]:
    by_task: dict[str, list[StepRecord]] = {r.task_id: [] for r in records}
    for step in uow.ap.steps(list(by_task)):
        by_task[step.task_id].append(step)
    with_steps = [r for r in records if by_task[r.task_id]]
    messages: dict[int, list[Message]] = {r.ticket_id: [] for r in with_steps}
    if with_steps:
        for message in uow.ap.messages([r.ticket_id for r in with_steps]):
            messages[message.ticket_id].append(message)
    views: dict[str, list[StepView]] = {}
    for r in records:
        by_step: dict[str, list[ArtifactRecord]] = {}
        for artifact in artifacts[r.task_id]:
            if artifact.step_id is not None:
                by_step.setdefault(artifact.step_id, []).append(artifact)
        states = derive(by_task[r.task_id], messages.get(r.ticket_id, []),
                        tickets[r.ticket_id])
        views[r.task_id] = [
            StepView(s, r.task_id, by_step.get(s.step_id, []) if s.status == "completed"
                     else [])
            for s in states
        ]
    return views
