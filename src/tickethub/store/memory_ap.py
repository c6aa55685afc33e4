"""The Agent Protocol door's records in memory: ``MemoryApStore`` opens a
``MemoryStore``'s transactions with an ``ap`` repository (tasks, steps, artifacts) next
to the core ones, with ``store/ap_records.py``'s contracts (the ``ApStore`` port of
``services/agent_tasks.py``; ``tests/store/test_store_contract_ap.py`` runs on every
store).

Tables, as ``ap_tables`` keeps them: ``ap_tasks`` (task id → record; one task per
ticket), ``ap_steps`` and ``ap_artifacts`` (row id → record, ids ascending, so insertion
order is SQL's ``ORDER BY id``), with their unique outside ids beside them."""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import TypeVar, cast

from tickethub.domain.agent_protocol import (
    AP_CHANNEL,
    ArtifactRecord,
    StepRecord,
    TaskFilter,
    TaskRecord,
    TaskTicket,
)
from tickethub.domain.messages import Message, MessageKind
from tickethub.domain.tickets import Ticket
from tickethub.store.memory_state import (
    Changes,
    ConstraintViolation,
    MemoryState,
    as_json,
    as_utc,
)
from tickethub.store.memory_store import MemoryStore, MemoryUnitOfWork
from tickethub.store.memory_tickets import MemoryTicketRepository, readable_row, ref_values

_REPLY_KINDS = (MessageKind.COMMENT, MessageKind.ANSWER)


def _message(message: Message) -> Message:
    return replace(message, data=as_json(message.data))


_Input = TypeVar("_Input", TaskRecord, StepRecord)
_OfTask = TypeVar("_OfTask", StepRecord, ArtifactRecord)


def _copied(record: _Input) -> _Input:
    """A task or step as read: its own copy of the caller's JSON."""
    return replace(record, additional_input=as_json(record.additional_input))


def _stored(record: _Input) -> _Input:
    """A task or step as stored: JSON copied, time in UTC, as the columns keep them."""
    return replace(record, additional_input=as_json(record.additional_input),
                   created_at=as_utc(record.created_at))


def _of_task(rows: dict[int, _OfTask], row_ids: dict[str, int], outside_id: str,
             task_id: str) -> _OfTask | None:
    """The step or artifact with ``outside_id``, if it is one of ``task_id``'s."""
    row_id = row_ids.get(outside_id)
    found = None if row_id is None else rows[row_id]
    return None if found is None or found.task_id != task_id else found


class MemoryApRepository:
    def __init__(self, state: MemoryState, changes: Changes) -> None:
        self._s = state
        self._changes = changes
        self._tasks: dict[str, TaskRecord] = state.table("ap_tasks")
        self._task_of_ticket: dict[int, str] = state.table("ap_task_tickets")
        self._steps: dict[int, StepRecord] = state.table("ap_steps")
        self._step_ids: dict[str, int] = state.table("ap_step_ids")
        self._artifacts: dict[int, ArtifactRecord] = state.table("ap_artifacts")
        self._artifact_ids: dict[str, int] = state.table("ap_artifact_ids")
        self._claims: dict[str, datetime] = state.table("ap_step_claims")

    # -- tasks ------------------------------------------------------------------------------

    def add_tasks(self, records: Sequence[TaskRecord]) -> None:
        ids = [r.task_id for r in records]
        tickets = [r.ticket_id for r in records]
        if len(set(ids)) != len(ids) or any(i in self._tasks for i in ids):
            raise ConstraintViolation("a task with this id is stored already")
        if len(set(tickets)) != len(tickets) or any(t in self._task_of_ticket
                                                    for t in tickets):
            raise ConstraintViolation("this ticket carries a task already")
        if any(t not in self._s.tickets for t in tickets):
            raise ConstraintViolation("no ticket for a task")
        for r in records:
            self._changes.put(self._tasks, r.task_id, _stored(r))
            self._changes.put(self._task_of_ticket, r.ticket_id, r.task_id)

    def get_task(self, task_id: str) -> TaskRecord | None:
        found = self._tasks.get(task_id)
        return None if found is None else _copied(found)

    def list_tasks(self, filters: TaskFilter, offset: int, limit: int
                   ) -> tuple[builtins.list[TaskRecord], int]:
        matching = [r for r in sorted(self._tasks.values(), key=lambda r: r.ticket_id)
                    if self._matches(r.ticket_id, filters)]
        return [_copied(r) for r in matching[offset:offset + limit]], len(matching)

    def _matches(self, ticket_id: int, filters: TaskFilter) -> bool:
        row = self._s.tickets[ticket_id]
        t = row.ticket
        if filters.status and t.status not in filters.status:
            return False
        if filters.label is not None and filters.label.strip().lower() not in t.labels:
            return False
        if filters.readable_by is not None and not readable_row(self._s, row,
                                                                filters.readable_by):
            return False
        refs = set(ref_values(t.refs))
        return all(pair in refs for pair in filters.inputs)

    def task_ticket(self, task_id: str) -> Ticket | None:
        found = self._tasks.get(task_id)
        return None if found is None else self._tickets().get(found.ticket_id)

    def open_tasks(self, task_ids: Sequence[str]) -> dict[str, TaskTicket]:
        # One lock orders every memory transaction: the tickets are already held.
        found = {}
        for task_id in task_ids:
            record = self._tasks.get(task_id)
            if record is not None:
                found[task_id] = TaskTicket.of(self._s.tickets[record.ticket_id].ticket)
        return found

    def task_tickets(self, ticket_ids: Sequence[int]) -> dict[int, TaskTicket]:
        return {i: TaskTicket.of(self._s.tickets[i].ticket) for i in ticket_ids
                if i in self._s.tickets}

    # -- steps ------------------------------------------------------------------------------

    def add_steps(self, records: Sequence[StepRecord], *,
                  claims: Mapping[str, datetime] | None = None) -> None:
        ids = [r.step_id for r in records]
        if len(set(ids)) != len(ids) or any(i in self._step_ids for i in ids):
            raise ConstraintViolation("a step with this id is stored already")
        for r in records:
            if r.task_id not in self._tasks:
                raise ConstraintViolation(f"no task {r.task_id} for a step")
            if r.input_message_id not in self._s.messages:
                raise ConstraintViolation(f"no message {r.input_message_id} for a step")
        for row_id, r in zip(self._s.next_ids("ap_steps", len(records)), records,
                             strict=True):
            self._changes.put(self._steps, row_id, _stored(r))
            self._changes.put(self._step_ids, r.step_id, row_id)
            if claims and r.step_id in claims:
                self._changes.put(self._claims, r.step_id, as_utc(claims[r.step_id]))

    def claim_steps(self, step_ids: Sequence[str], now: datetime, until: datetime
                    ) -> set[str]:
        """The steps of ``step_ids`` no one holds (never claimed, or claimed until
        before ``now``), now claimed until ``until``."""
        won = {i for i in step_ids if i in self._step_ids
               and (i not in self._claims or self._claims[i] < as_utc(now))}
        for step_id in won:
            self._changes.put(self._claims, step_id, as_utc(until))
        return won

    def renew_claims(self, step_ids: Sequence[str], now: datetime, until: datetime
                     ) -> set[str]:
        held = {i for i in step_ids if i in self._claims and self._claims[i] >= as_utc(now)}
        for step_id in held:
            self._changes.put(self._claims, step_id, as_utc(until))
        return held

    def lapsed_claims(self, now: datetime, limit: int) -> builtins.list[tuple[str, str]]:
        lapsed = sorted((until, step_id) for step_id, until in self._claims.items()
                        if until < as_utc(now))[:limit]
        return [(self._steps[self._step_ids[step_id]].task_id, step_id)
                for _, step_id in lapsed]

    def release_steps(self, step_ids: Sequence[str]) -> None:
        for step_id in step_ids:
            if step_id in self._claims:
                self._changes.drop(self._claims, step_id)

    def steps(self, task_ids: Sequence[str]) -> builtins.list[StepRecord]:
        wanted = set(task_ids)
        return [_copied(s) for s in self._steps.values() if s.task_id in wanted]

    def latest_step(self, task_id: str) -> StepRecord | None:
        return next((_copied(s) for s in reversed(self._steps.values())
                     if s.task_id == task_id), None)

    def get_step(self, task_id: str, step_id: str) -> StepRecord | None:
        found = _of_task(self._steps, self._step_ids, step_id, task_id)
        return None if found is None else _copied(found)

    # -- replies ----------------------------------------------------------------------------

    def _may_reply(self, message: Message, after_message_id: int) -> bool:
        return (message.id > after_message_id and message.trusted
                and message.kind in _REPLY_KINDS and message.via != AP_CHANNEL)

    def replies_after(self, ticket_ids: Sequence[int], after_message_id: int
                      ) -> builtins.list[Message]:
        wanted = set(ticket_ids)
        return [_message(m) for m in self._s.messages.values()
                if m.ticket_id in wanted and self._may_reply(m, after_message_id)]

    def first_reply(self, ticket_id: int, task_id: str, after_message_id: int,
                    creator: str) -> Message | None:
        return next((_message(m) for m in self._s.messages.values()
                     if m.ticket_id == ticket_id and m.author != creator
                     and self._may_reply(m, after_message_id)), None)

    # -- artifacts --------------------------------------------------------------------------

    def add_artifact(self, record: ArtifactRecord) -> None:
        if record.artifact_id in self._artifact_ids:
            raise ConstraintViolation("an artifact with this id is stored already")
        if record.task_id not in self._tasks:
            raise ConstraintViolation(f"no task {record.task_id} for an artifact")
        [row_id] = self._s.next_ids("ap_artifacts", 1)
        self._changes.put(self._artifacts, row_id,
                          replace(record, created_at=as_utc(record.created_at)))
        self._changes.put(self._artifact_ids, record.artifact_id, row_id)

    def step_artifacts(self, step_id: str) -> builtins.list[ArtifactRecord]:
        return self.artifacts_of_steps([step_id])

    def artifacts_of_steps(self, step_ids: Sequence[str]) -> builtins.list[ArtifactRecord]:
        wanted = set(step_ids)
        return [a for a in self._artifacts.values() if a.step_id in wanted]

    def artifacts(self, task_ids: Sequence[str]) -> builtins.list[ArtifactRecord]:
        wanted = set(task_ids)
        return [a for a in self._artifacts.values() if a.task_id in wanted]

    def artifact_page(self, task_id: str, offset: int, limit: int
                      ) -> tuple[builtins.list[ArtifactRecord], int]:
        found = self.artifacts([task_id])
        return found[offset:offset + limit], len(found)

    def get_artifact(self, task_id: str, artifact_id: str) -> ArtifactRecord | None:
        return _of_task(self._artifacts, self._artifact_ids, artifact_id, task_id)

    # -- the tickets and messages behind them -----------------------------------------------

    def messages(self, ticket_ids: Sequence[int]) -> builtins.list[Message]:
        wanted = set(ticket_ids)
        return [_message(m) for m in self._s.messages.values() if m.ticket_id in wanted]

    def tickets(self, ticket_ids: Sequence[int]) -> builtins.list[Ticket]:
        return list(self._tickets().get_many(ticket_ids).values())

    def _tickets(self) -> MemoryTicketRepository:
        return MemoryTicketRepository(self._s, self._changes)


class MemoryApUnitOfWork(MemoryUnitOfWork):
    def __init__(self, state: MemoryState, changes: Changes) -> None:
        super().__init__(state, changes)
        self.ap = MemoryApRepository(state, changes)


class MemoryApStore:
    """The ``MemoryStore``'s transactions with an ``ap`` repository added."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    @contextmanager
    def write(self) -> Iterator[MemoryApUnitOfWork]:
        """A transaction (or a savepoint of the one this thread has open)."""
        with self._store.transaction() as changes:
            yield MemoryApUnitOfWork(self._store.state, changes)

    # A read is the same transaction, as in ``MemoryStore``: one lock orders them all.
    read = write

    def join(self, uow: object) -> MemoryApUnitOfWork:
        """``uow``, a transaction of the ``MemoryStore`` this wraps (the hub's write path
        opened it), with the ``ap`` repository added: its writes go with that
        transaction, and roll back with it."""
        if not isinstance(uow, MemoryUnitOfWork):
            raise TypeError(f"not a transaction of the in-memory store: {uow!r}")
        joined = cast(MemoryApUnitOfWork, uow)  # the same object, one repository more
        if getattr(joined, "ap", None) is None:
            joined.ap = MemoryApRepository(uow.state, uow.changes)
        return joined
