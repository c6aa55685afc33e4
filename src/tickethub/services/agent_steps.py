"""Steps of an Agent Protocol task, derived from the conversation on its ticket.

A step is one turn: its input is a message the client posted on the task's ticket, and
its reply is the first later message that may steer the client — trusted, not written
by the task's creator, and not another step's input (nothing posted through the door's
own channel ``agent-protocol`` is a reply). Every step still waiting when that
reply lands gets it (a person who reads two questions and answers once answers both).
A step whose ticket was resolved (answered, done, cancelled, expired) without a reply is
completed too. ``is_last`` is true for the newest step of a resolved ticket.

Deriving instead of storing a status means nothing can go stale: a reply through any
channel (web, email, chat, the SDK) completes the step the moment it is stored.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from tickethub.domain.agent_protocol import AP_CHANNEL as AP_CHANNEL
from tickethub.domain.agent_protocol import StepRecord as StepRecord
from tickethub.domain.messages import Message, MessageKind
from tickethub.domain.tickets import Ticket

StepStatus = Literal["created", "running", "completed"]
_REPLY_KINDS = frozenset({MessageKind.COMMENT, MessageKind.ANSWER})


@dataclass(frozen=True, slots=True)
class StepState:
    """A step as the client sees it."""

    record: StepRecord
    status: StepStatus
    output: str | None
    additional_output: dict[str, Any] | None
    is_last: bool

    @property
    def step_id(self) -> str:
        return self.record.step_id


def _reply_output(reply: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"replied_by": reply.author, "via": reply.via}
    if reply.data is not None:
        out["data"] = reply.data
    return out


class _Created(Protocol):
    @property
    def created_by(self) -> str: ...


def is_reply(message: Message, ticket: _Created, inputs: Collection[int]) -> bool:
    """True when ``message`` may answer a step of ``ticket`` (see the module doc). Step
    inputs are the messages the door posts, on its own channel ``AP_CHANNEL``."""
    return (message.trusted and message.kind in _REPLY_KINDS
            and message.author != ticket.created_by and message.via != AP_CHANNEL
            and message.id not in inputs)


def state_of(step: StepRecord, reply: Message | None, ticket: Ticket, newest: bool
             ) -> StepState:
    """The state of one step, given its reply (if any), its ticket and whether it is the
    task's newest step."""
    if ticket.waiting:
        return open_state(step, reply)
    is_last = newest
    extra: dict[str, Any]
    if reply is not None:
        extra = _reply_output(reply)
        if is_last:
            extra["ticket_status"] = ticket.status.value
        return StepState(step, "completed", reply.body or None, extra, is_last)
    extra = {"ticket_status": ticket.status.value}
    answer = ticket.answer
    if answer is not None and answer.data is not None and is_last:
        extra["data"] = answer.data
    text = answer.text if answer is not None and is_last else None
    return StepState(step, "completed", text, extra, is_last)


def open_state(step: StepRecord, reply: Message | None) -> StepState:
    """The state of a step whose ticket still waits: completed by its reply, if any."""
    if reply is not None:
        # A decision given as data only has an empty body: no output text, just the data.
        return StepState(step, "completed", reply.body or None, _reply_output(reply), False)
    return StepState(step, "running", None, None, False)


def derive(steps: list[StepRecord], messages: list[Message], ticket: Ticket) -> list[StepState]:
    """The state of each of ``steps`` (oldest first) given the ticket and its messages."""
    inputs = {s.input_message_id for s in steps}
    replies = sorted((m for m in messages if is_reply(m, ticket, inputs)), key=lambda m: m.id)
    states: list[StepState] = []
    for index, step in enumerate(steps):
        reply = next((m for m in replies if m.id > step.input_message_id), None)
        states.append(state_of(step, reply, ticket, index == len(steps) - 1))
    return states
