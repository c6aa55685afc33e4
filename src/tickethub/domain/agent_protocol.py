"""Records of the Agent Protocol door that the store keeps: tasks, steps and artifacts,
and what the step paths need of a task's ticket."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tickethub.domain.status import Status, is_waiting
from tickethub.domain.tickets import Ticket

AP_CHANNEL = "agent-protocol"  # the channel step inputs are posted through


@dataclass(frozen=True, slots=True)
class StepRecord:
    """A step as stored: what the client sent, and the message that carries it."""

    step_id: str
    task_id: str
    input: str | None
    additional_input: dict[str, Any] | None
    input_message_id: int
    created_by: str
    created_at: datetime


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
class TaskTicket:
    """What the step paths need of a task's ticket (read without its JSON columns)."""

    id: int
    path: str
    status: Status
    created_by: str

    @property
    def waiting(self) -> bool:
        return is_waiting(self.status)

    @classmethod
    def of(cls, ticket: Ticket) -> TaskTicket:
        return cls(ticket.id, ticket.path, ticket.status, ticket.created_by)


@dataclass(frozen=True, slots=True)
class TaskFilter:
    """Extension filters of the task list: ticket status, a label, additional_input keys."""

    status: tuple[Status, ...] = ()
    label: str | None = None
    inputs: tuple[tuple[str, str], ...] = ()
    # Only tasks whose ticket this name reads (``domain.visibility``); ``None``: all.
    readable_by: str | None = None
