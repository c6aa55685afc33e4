"""Agent Protocol use cases: a task is a ticket (kind ``task``), a step is one turn on it.

* ``create`` opens the ticket and its task row in one transaction; the AP id and every
  scalar top-level ``additional_input`` key go into the ticket's indexed refs
  (``ap_task_id``, ``ap_input.<key>``), so tasks are found by an outside id and filtered
  by e.g. ``app_id``. ``input`` and ``additional_input`` are also kept exactly as sent.
* ``post_step`` posts the step's input as a message on the ticket, for whoever is
  assigned (a person through any channel, or an agent worker) to reply to. A step can
  not be posted to a resolved ticket: ``Conflict``, and nothing changes.
* Step states are derived from the ticket's messages (``agent_steps.derive``).

Creates and steps are written by the hub's one write path (``ticket_writes``): a create
is an ``Ask`` whose companion (``TaskCompanion``) is the task row, so native asks and task
creates of one batch are one ``INSERT`` of tickets; steps are ``agent_step_writes``.
Waiting for the reply is the door's job (it owns the event loop); the reads here are
sync and thread-safe.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from tickethub.domain.actors import Actor
from tickethub.domain.agent_protocol import ArtifactRecord as ArtifactRecord
from tickethub.domain.agent_protocol import TaskFilter as TaskFilter
from tickethub.domain.agent_protocol import TaskRecord as TaskRecord
from tickethub.domain.agent_protocol import TaskTicket as TaskTicket
from tickethub.domain.messages import Message
from tickethub.domain.status import Kind
from tickethub.domain.tickets import Ticket, TicketDraft
from tickethub.domain.visibility import reader
from tickethub.errors import NotFound
from tickethub.services.agent_steps import (
    StepRecord,
    StepState,
    derive,
    state_of,
)
from tickethub.services.ports import Clock, Notifier, Store, UnitOfWork
from tickethub.services.ticket_writes import Ask, TicketWriter
from tickethub.services.visibility import readable

REF_TASK = "ap_task_id"
REF_INPUT = "ap_input."
DEFAULT_TITLE = "Agent Protocol task"
EMPTY_STEP_BODY = "(next step, no input)"
_TITLE_MAX = 200
_REF_KEY_MAX = 100 - len(REF_INPUT)


@dataclass(frozen=True, slots=True)
class TaskInput:
    """A task to create: who asks, and the body of ``POST /ap/v1/agent/tasks``."""

    actor: Actor
    text: str | None
    additional_input: dict[str, Any] | None


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
    def add_steps(self, records: Sequence[StepRecord], *,
                  claims: Mapping[str, datetime] | None = None) -> None:
        """Store steps, in order; ``claims``: the step ids an in-hub worker stores while
        it handles them, each claimed until its time."""
        ...
    def claim_steps(self, step_ids: Sequence[str], now: datetime, until: datetime
                    ) -> set[str]:
        """Claim the unclaimed (or expired) of these steps until ``until``: one
        conditional update; the ids claimed by this call."""
        ...
    def renew_claims(self, step_ids: Sequence[str], now: datetime, until: datetime
                     ) -> set[str]:
        """Extend the claims of these steps that have not lapsed (held until ``now`` or
        later) to ``until``; the ids renewed."""
        ...
    def lapsed_claims(self, now: datetime, limit: int) -> list[tuple[str, str]]:
        """(task id, step id) of up to ``limit`` steps whose claim lapsed before ``now``
        (the process that held it stopped renewing: it died or stalled)."""
        ...
    def release_steps(self, step_ids: Sequence[str]) -> None: ...
    def open_tasks(self, task_ids: Sequence[str]) -> dict[str, TaskTicket]:
        """The tickets of these tasks, by task id, locked for this transaction."""
        ...
    def task_tickets(self, ticket_ids: Sequence[int]) -> dict[int, TaskTicket]: ...
    def steps(self, task_ids: Sequence[str]) -> list[StepRecord]:
        """Steps of these tasks, oldest first."""
        ...
    def latest_step(self, task_id: str) -> StepRecord | None: ...
    def get_step(self, task_id: str, step_id: str) -> StepRecord | None: ...
    def task_ticket(self, task_id: str) -> Ticket | None:
        """The ticket of the task, in one read."""
        ...
    def replies_after(self, ticket_ids: Sequence[int], after_message_id: int
                      ) -> list[Message]:
        """Messages on these tickets after ``after_message_id`` that could be replies
        (trusted comments and answers, not step inputs), oldest first; ``is_reply``
        still decides per ticket (its creator's own messages are none)."""
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
    def tickets(self, ticket_ids: Sequence[int]) -> list[Ticket]: ...


class ApUnitOfWork(UnitOfWork, Protocol):
    @property
    def ap(self) -> ApRepository: ...


class ApStore(Protocol):
    def write(self) -> AbstractContextManager[ApUnitOfWork]: ...
    def read(self) -> AbstractContextManager[ApUnitOfWork]: ...
    def join(self, uow: UnitOfWork) -> ApUnitOfWork:
        """``uow`` (a transaction of the hub's store) with the ``ap`` repository."""
        ...


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


def new_uuid() -> str:
    """A new task, step or artifact id (a random UUID, as the reference gives)."""
    return str(uuid.uuid4())


class TaskRows:
    """Writes the task rows of the creates in a batch of the hub's write path (the
    ``CompanionWriter`` of ``TaskCompanion``)."""

    def __init__(self, store: ApStore) -> None:
        self._store = store

    def write_companions(self, uow: UnitOfWork,
                         opened: Sequence[tuple[TaskCompanion, Ticket]], now: datetime
                         ) -> list[TaskView]:
        records = [TaskRecord(c.task_id, ticket.id, c.text, c.additional_input, now)
                   for c, ticket in opened]
        self._store.join(uow).ap.add_tasks(records)
        return [TaskView(record, ticket, [])
                for record, (_, ticket) in zip(records, opened, strict=True)]


@dataclass(frozen=True, slots=True)
class TaskCompanion:
    """The task row that goes with a create's ticket (``ticket_writes.Companion``)."""

    writer: TaskRows
    task_id: str
    text: str | None
    additional_input: dict[str, Any] | None

    @property
    def event_data(self) -> Mapping[str, Any]:
        return {REF_TASK: self.task_id}


class AgentTaskService:
    """Tasks and steps of the Agent Protocol door. Thread-safe."""

    def __init__(self, store: ApStore, clock: Clock, notifier: Notifier,
                 new_id: Callable[[], str] = new_uuid) -> None:
        self._store = store
        self._clock = clock
        self._notifier = notifier
        self._new_id = new_id
        self._rows = TaskRows(store)

    # -- tasks ---------------------------------------------------------------------------

    def ask_of(self, item: TaskInput) -> Ask:
        """The write of a task create, for the hub's write path: an ask of a ``task``
        ticket carrying the task row; its result is the ``TaskView``."""
        task_id = self._new_id()
        draft = TicketDraft(kind=Kind.TASK, title=_title(item.text), body=item.text or "",
                            refs={REF_TASK: task_id, **input_refs(item.additional_input)})
        return Ask(item.actor, draft, companion=TaskCompanion(
            self._rows, task_id, item.text, item.additional_input))

    def create(self, actor: Actor, text: str | None,
               additional_input: dict[str, Any] | None) -> TaskView:
        return self.create_many([TaskInput(actor, text, additional_input)])[0]

    def create_many(self, inputs: Sequence[TaskInput]) -> list[TaskView]:
        """Create several tasks in one transaction of their own (tools and tests; the
        door's creates go through the hub's group commit with ``ask_of``)."""
        store: Store = self._store  # an ApStore is a Store with an ``ap`` repository
        results = TicketWriter(store, self._clock, self._notifier).write(
            [self.ask_of(item) for item in inputs])
        for result in results:
            if isinstance(result, Exception):
                raise result
        return results

    # -- the in-hub worker's claims on steps left running -------------------------------

    def claim_steps(self, step_ids: Sequence[str], lease_seconds: float) -> set[str]:
        """Claim these steps for this process's in-hub worker for ``lease_seconds``;
        those claimed by this call (a step another process holds is left out). Several
        hub processes catching up at once so hand each step to one worker."""
        now = self._clock.now()
        with self._store.write() as uow:
            return uow.ap.claim_steps(step_ids, now, now + timedelta(seconds=lease_seconds))

    def tend_claims(self, renew: Sequence[str], release: Sequence[str],
                    lease_seconds: float) -> set[str]:
        """One transaction of the in-hub worker's upkeep: give up the claims of the steps
        in ``release`` (handled, or left to a person) and extend those in ``renew`` (its
        handlers still run) by ``lease_seconds``; the ids renewed (a claim that lapsed
        meanwhile may be another process's now, and is not)."""
        now = self._clock.now()
        with self._store.write() as uow:
            if release:
                uow.ap.release_steps(release)
            if not renew:
                return set()
            return uow.ap.renew_claims(renew, now, now + timedelta(seconds=lease_seconds))

    def lapsed_claims(self, limit: int = 100) -> list[tuple[str, str]]:
        """(task id, step id) of steps whose claim lapsed: their process stopped."""
        with self._store.read() as uow:
            return uow.ap.lapsed_claims(self._clock.now(), limit)

    def release_steps(self, step_ids: Sequence[str]) -> None:
        """Give up claims (the worker stopped before replying): the next start takes them."""
        with self._store.write() as uow:
            uow.ap.release_steps(step_ids)

    # ``viewer``: the actor reading; a task whose ticket it may not read
    # (``domain.visibility``) is ``NotFound`` and left out of pages. ``None``: no filter.

    def get(self, task_id: str, *, with_steps: bool = False,
            viewer: Actor | None = None) -> TaskView:
        with self._store.read() as uow:
            record = self._task(uow, task_id)
            view = self._views(uow, [record], with_steps)[0]
            _require_readable(uow, viewer, view.ticket, task_id)
        return view

    def page(self, filters: TaskFilter, offset: int, limit: int, *,
             with_steps: bool = False, viewer: Actor | None = None
             ) -> tuple[list[TaskView], int]:
        if viewer is not None:
            filters = replace(filters, readable_by=reader(viewer))
        with self._store.read() as uow:
            records, total = uow.ap.list_tasks(filters, offset, limit)
            return self._views(uow, records, with_steps), total

    # -- steps (written by ``agent_step_writes.StepWriter``) -----------------------------

    def steps(self, task_id: str, viewer: Actor | None = None
              ) -> tuple[Ticket, list[StepView]]:
        """The task's ticket and all its steps, oldest first."""
        with self._store.read() as uow:
            record = self._task(uow, task_id)
            view = self._views(uow, [record], True)[0]
            _require_readable(uow, viewer, view.ticket, task_id)
        assert view.steps is not None
        return view.ticket, view.steps

    def step(self, task_id: str, step_id: str, viewer: Actor | None = None
             ) -> tuple[Ticket, StepView]:
        """The task's ticket and the step asked for (``NotFound`` for an unknown id).
        Reads only what this step needs, however long the task's history."""
        with self._store.read() as uow:
            ticket = uow.ap.task_ticket(task_id)
            if ticket is None:
                raise NotFound(f"task {task_id} does not exist", field="task_id")
            _require_readable(uow, viewer, ticket, task_id)
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


def _require_readable(uow: UnitOfWork, viewer: Actor | None, ticket: Ticket,
                      task_id: str) -> None:
    """``NotFound``, as for an unknown task, when ``viewer`` may not read its ticket."""
    if viewer is not None and not readable(uow.tickets, viewer, ticket, ticket.assignee):
        raise NotFound(f"task {task_id} does not exist", field="task_id")


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
