"""The SQL side of the Agent Protocol door: ``SqlApStore`` opens the hub's transactions
and adds an ``ap`` repository (tasks, steps, artifacts) next to the core ones, so a task
and its ticket, or a step and its message, are written in one transaction."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, bindparam, func, insert, or_, select, update

from tickethub.domain.agent_protocol import (
    AP_CHANNEL,
    ArtifactRecord,
    StepRecord,
    TaskFilter,
    TaskRecord,
    TaskTicket,
)
from tickethub.domain.messages import Message, MessageKind
from tickethub.domain.status import Status
from tickethub.domain.tickets import Ticket
from tickethub.store.ap_tables import ap_artifacts, ap_steps, ap_tasks
from tickethub.store.bulk import InList, insert_rows
from tickethub.store.records import message_from_row
from tickethub.store.sql_store import SqlStore, SqlUnitOfWork
from tickethub.store.tables import messages, ticket_labels, ticket_refs, tickets
from tickethub.store.ticket_rows import row_to_ticket
from tickethub.store.visibility import readable_by

REPLY_KINDS = [MessageKind.COMMENT.value, MessageKind.ANSWER.value]

# Statements of the group-committed paths, built once (building one costs about as
# much CPU as running it); those with a list of ids once per length of it (``InList``).
_TICKET_HEAD = (tickets.c.path, tickets.c.status, tickets.c.created_by)


def _open_tasks(ids_in: Callable[[Any], Any]) -> Any:
    return (select(ap_tasks.c.task_id, ap_tasks.c.ticket_id, *_TICKET_HEAD)
            .join(tickets, tickets.c.id == ap_tasks.c.ticket_id)
            .where(ids_in(ap_tasks.c.task_id)))


_OPEN_TASKS = InList(_open_tasks)
_OPEN_TASKS_LOCKED = InList(lambda ids_in: _open_tasks(ids_in).order_by(tickets.c.id)
                            .with_for_update(of=tickets))
_TASK_TICKETS = InList(lambda ids_in: select(
    tickets.c.id.label("ticket_id"), *_TICKET_HEAD).where(ids_in(tickets.c.id)))
_TICKETS_BY_ID = InList(lambda ids_in: select(tickets).where(ids_in(tickets.c.id)))
_STEPS = InList(lambda ids_in: select(ap_steps).where(ids_in(ap_steps.c.task_id))
                .order_by(ap_steps.c.id))
_ARTIFACTS = InList(lambda ids_in: select(ap_artifacts).where(ids_in(ap_artifacts.c.task_id))
                    .order_by(ap_artifacts.c.id))
_MESSAGES = InList(lambda ids_in: select(messages).where(ids_in(messages.c.ticket_id))
                   .order_by(messages.c.id))
_LATEST_STEP = (select(ap_steps).where(ap_steps.c.task_id == bindparam("task_id"))
                .order_by(ap_steps.c.id.desc()).limit(1))
_STEP = select(ap_steps).where(ap_steps.c.task_id == bindparam("task_id"),
                               ap_steps.c.step_id == bindparam("step_id"))
_TASK_TICKET = (select(tickets).join(ap_tasks, ap_tasks.c.ticket_id == tickets.c.id)
                .where(ap_tasks.c.task_id == bindparam("task_id")))
_STEP_ARTIFACTS = InList(lambda ids_in: select(ap_artifacts)
                         .where(ids_in(ap_artifacts.c.step_id)).order_by(ap_artifacts.c.id))
# What may be a reply, as far as SQL can tell (``agent_steps.is_reply`` is the rule).
_MAY_REPLY = (
    messages.c.id > bindparam("after"),
    messages.c.trusted.is_(True),
    messages.c.kind.in_(REPLY_KINDS),
    messages.c.via != AP_CHANNEL,  # step inputs are never replies
)
_FIRST_REPLY = select(messages).where(
    messages.c.ticket_id == bindparam("ticket_id"), *_MAY_REPLY,
    messages.c.author != bindparam("creator"),
).order_by(messages.c.id).limit(1)
_REPLIES_AFTER = InList(lambda ids_in: select(messages).where(
    ids_in(messages.c.ticket_id), *_MAY_REPLY).order_by(messages.c.id))


def _task(row: Any) -> TaskRecord:
    return TaskRecord(row.task_id, row.ticket_id, row.input, row.additional_input,
                      row.created_at)


def _task_ticket(row: Any) -> TaskTicket:
    return TaskTicket(row.ticket_id, row.path, Status(row.status), row.created_by)


def _step(row: Any) -> StepRecord:
    return StepRecord(row.step_id, row.task_id, row.input, row.additional_input,
                      row.input_message_id, row.created_by, row.created_at)


def _artifact(row: Any) -> ArtifactRecord:
    return ArtifactRecord(row.artifact_id, row.task_id, row.step_id, row.agent_created,
                          row.file_name, row.relative_path, row.size, row.storage_key,
                          row.created_by, row.created_at)


class SqlApRepository:
    def __init__(self, connection: Connection) -> None:
        self._c = connection

    def add_tasks(self, records: Sequence[TaskRecord]) -> None:
        insert_rows(self._c, ap_tasks, [
            {"task_id": r.task_id, "ticket_id": r.ticket_id, "input": r.input,
             "additional_input": r.additional_input, "created_at": r.created_at}
            for r in records])

    def get_task(self, task_id: str) -> TaskRecord | None:
        row = self._c.execute(select(ap_tasks).where(ap_tasks.c.task_id == task_id)).first()
        return _task(row) if row else None

    def list_tasks(self, filters: TaskFilter, offset: int, limit: int
                   ) -> tuple[list[TaskRecord], int]:
        where = []
        if filters.status:
            where.append(ap_tasks.c.ticket_id.in_(
                select(tickets.c.id).where(tickets.c.status.in_([s.value for s in
                                                                 filters.status]))))
        if filters.label is not None:
            where.append(ap_tasks.c.ticket_id.in_(
                select(ticket_labels.c.ticket_id).where(
                    ticket_labels.c.label == filters.label.strip().lower())))
        if filters.readable_by is not None:
            where.append(ap_tasks.c.ticket_id.in_(
                select(tickets.c.id).where(readable_by(filters.readable_by))))
        for name, value in filters.inputs:
            where.append(ap_tasks.c.ticket_id.in_(
                select(ticket_refs.c.ticket_id).where(
                    ticket_refs.c.name == name, ticket_refs.c.value == value)))
        total = self._c.execute(
            select(func.count()).select_from(ap_tasks).where(*where)).scalar() or 0
        rows = self._c.execute(
            select(ap_tasks).where(*where).order_by(ap_tasks.c.ticket_id)
            .offset(offset).limit(limit))
        return [_task(r) for r in rows], int(total)

    def add_steps(self, records: Sequence[StepRecord], *,
                  claims: Mapping[str, datetime] | None = None) -> None:
        claims = claims or {}
        insert_rows(self._c, ap_steps, [
            {"step_id": r.step_id, "task_id": r.task_id, "input": r.input,
             "additional_input": r.additional_input, "input_message_id": r.input_message_id,
             "created_by": r.created_by, "created_at": r.created_at,
             "claimed_until": claims.get(r.step_id)} for r in records])

    def claim_steps(self, step_ids: Sequence[str], now: datetime, until: datetime
                    ) -> set[str]:
        """Claim the steps no one holds (never claimed, or claimed until before ``now``)
        until ``until``, in one conditional ``UPDATE``; the ids this call claimed. Two
        processes claiming one step: PostgreSQL re-checks the condition after the
        first's commit, so the second claims nothing."""
        if not step_ids:
            return set()
        stmt = (update(ap_steps)
                .where(ap_steps.c.step_id.in_(list(step_ids)),
                       or_(ap_steps.c.claimed_until.is_(None),
                           ap_steps.c.claimed_until < now))
                .values(claimed_until=until)
                .returning(ap_steps.c.step_id))
        return {row.step_id for row in self._c.execute(stmt)}

    def renew_claims(self, step_ids: Sequence[str], now: datetime, until: datetime
                     ) -> set[str]:
        if not step_ids:
            return set()
        stmt = (update(ap_steps)
                .where(ap_steps.c.step_id.in_(list(step_ids)),
                       ap_steps.c.claimed_until >= now)
                .values(claimed_until=until)
                .returning(ap_steps.c.step_id))
        return {row.step_id for row in self._c.execute(stmt)}

    def lapsed_claims(self, now: datetime, limit: int) -> list[tuple[str, str]]:
        rows = self._c.execute(
            select(ap_steps.c.task_id, ap_steps.c.step_id)
            .where(ap_steps.c.claimed_until < now)
            .order_by(ap_steps.c.claimed_until).limit(limit))
        return [(r.task_id, r.step_id) for r in rows]

    def release_steps(self, step_ids: Sequence[str]) -> None:
        """Drop the claims on these steps (their process stopped handling them)."""
        if step_ids:
            self._c.execute(update(ap_steps).where(ap_steps.c.step_id.in_(list(step_ids)))
                            .values(claimed_until=None))

    def open_tasks(self, task_ids: Sequence[str]) -> dict[str, TaskTicket]:
        stmt = _OPEN_TASKS_LOCKED if self._c.dialect.name == "postgresql" else _OPEN_TASKS
        rows = self._c.execute(*stmt.bound(task_ids))
        return {r.task_id: _task_ticket(r) for r in rows}

    def task_tickets(self, ticket_ids: Sequence[int]) -> dict[int, TaskTicket]:
        rows = self._c.execute(*_TASK_TICKETS.bound(ticket_ids))
        return {r.ticket_id: _task_ticket(r) for r in rows}

    def steps(self, task_ids: Sequence[str]) -> list[StepRecord]:
        rows = self._c.execute(*_STEPS.bound(task_ids))
        return [_step(r) for r in rows]

    def latest_step(self, task_id: str) -> StepRecord | None:
        row = self._c.execute(_LATEST_STEP, {"task_id": task_id}).first()
        return _step(row) if row else None

    def get_step(self, task_id: str, step_id: str) -> StepRecord | None:
        row = self._c.execute(_STEP, {"task_id": task_id, "step_id": step_id}).first()
        return _step(row) if row else None

    def task_ticket(self, task_id: str) -> Ticket | None:
        row = self._c.execute(_TASK_TICKET, {"task_id": task_id}).first()
        return row_to_ticket(row) if row else None

    def replies_after(self, ticket_ids: Sequence[int], after_message_id: int
                      ) -> list[Message]:
        rows = self._c.execute(*_REPLIES_AFTER.bound(ticket_ids, after=after_message_id))
        return [message_from_row(r) for r in rows]

    def first_reply(self, ticket_id: int, task_id: str, after_message_id: int,
                    creator: str) -> Message | None:
        row = self._c.execute(_FIRST_REPLY, {"ticket_id": ticket_id,
                                             "after": after_message_id,
                                             "creator": creator}).first()
        return message_from_row(row) if row else None

    def step_artifacts(self, step_id: str) -> list[ArtifactRecord]:
        return self.artifacts_of_steps([step_id])

    def artifacts_of_steps(self, step_ids: Sequence[str]) -> list[ArtifactRecord]:
        rows = self._c.execute(*_STEP_ARTIFACTS.bound(step_ids))
        return [_artifact(r) for r in rows]

    def add_artifact(self, record: ArtifactRecord) -> None:
        self._c.execute(insert(ap_artifacts), {
            "artifact_id": record.artifact_id, "task_id": record.task_id,
            "step_id": record.step_id, "agent_created": record.agent_created,
            "file_name": record.file_name, "relative_path": record.relative_path,
            "size": record.size, "storage_key": record.storage_key,
            "created_by": record.created_by, "created_at": record.created_at})

    def artifacts(self, task_ids: Sequence[str]) -> list[ArtifactRecord]:
        rows = self._c.execute(*_ARTIFACTS.bound(task_ids))
        return [_artifact(r) for r in rows]

    def artifact_page(self, task_id: str, offset: int, limit: int
                      ) -> tuple[list[ArtifactRecord], int]:
        where = ap_artifacts.c.task_id == task_id
        total = self._c.execute(
            select(func.count()).select_from(ap_artifacts).where(where)).scalar() or 0
        rows = self._c.execute(
            select(ap_artifacts).where(where).order_by(ap_artifacts.c.id)
            .offset(offset).limit(limit))
        return [_artifact(r) for r in rows], int(total)

    def get_artifact(self, task_id: str, artifact_id: str) -> ArtifactRecord | None:
        row = self._c.execute(select(ap_artifacts).where(
            ap_artifacts.c.task_id == task_id,
            ap_artifacts.c.artifact_id == artifact_id)).first()
        return _artifact(row) if row else None

    def messages(self, ticket_ids: Sequence[int]) -> list[Message]:
        rows = self._c.execute(*_MESSAGES.bound(ticket_ids))
        return [message_from_row(r) for r in rows]

    def tickets(self, ticket_ids: Sequence[int]) -> list[Ticket]:
        rows = self._c.execute(*_TICKETS_BY_ID.bound(ticket_ids))
        return [row_to_ticket(r) for r in rows]


class SqlApUnitOfWork(SqlUnitOfWork):
    """A ``SqlStore`` transaction's repositories with the ``ap`` one: the type of what
    ``SqlApStore.join`` hands back (the ``SqlUnitOfWork`` itself, one attribute more)."""

    ap: SqlApRepository


class SqlApStore:
    """The hub's ``SqlStore`` transactions with an ``ap`` repository added."""

    def __init__(self, store: SqlStore) -> None:
        self._store = store

    @contextmanager
    def write(self) -> Iterator[SqlApUnitOfWork]:
        with self._store.write() as uow:
            yield self.join(uow)

    @contextmanager
    def read(self) -> Iterator[SqlApUnitOfWork]:
        with self._store.read() as uow:
            yield self.join(uow)

    def join(self, uow: object) -> SqlApUnitOfWork:
        """``uow``, a transaction of the ``SqlStore`` this wraps (the hub's write path
        opened it), with the ``ap`` repository added: its writes go with that
        transaction, and roll back with it."""
        if not isinstance(uow, SqlUnitOfWork):
            raise TypeError(f"not a transaction of an SQL store: {uow!r}")
        joined = cast(SqlApUnitOfWork, uow)
        if getattr(joined, "ap", None) is None:
            joined.ap = SqlApRepository(uow.connection)
        return joined
