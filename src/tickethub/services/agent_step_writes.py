"""The writes of an Agent Protocol step's life, group-committed together: a client's step
input (``StepInput``), the reply of an agent worker running inside the hub
(``StepReply``), or both at once (``StepExchange``: the worker answered before the step
had to be stored).

``StepWriter`` is a part of the hub's one write path (``ticket_writes.WritePart``): its
items go into the hub's group commit with every other door's writes, so under load a
step costs a share of one commit, shared with native asks, answers and task creates.
Within it, every item succeeds or fails on its own: an item that can
not be written (an unknown or finished task, an actor who may not post) gets its error
in its place and changes nothing; the others are stored.

* A step input is a comment through the door's channel ``agent-protocol`` on the task's
  ticket, carrying the step's ids; small inputs also ride in the event, so a worker that
  follows the event stream needs no extra read.
* A reply is a comment by the worker; the step comes back as it now stands: completed by
  this reply, or by one that landed first (a person was quicker).

Tickets are not changed by either (only messages are added), so waiters are woken with
the tickets' ids and read back what they need.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from tickethub import json_codec
from tickethub.domain.actors import Actor, require_owner_or_responder
from tickethub.domain.events import EventType, NewEvent
from tickethub.domain.messages import Message, MessageDraft, MessageKind
from tickethub.errors import Conflict, NotFound, TickethubError
from tickethub.services.agent_steps import (
    AP_CHANNEL,
    StepRecord,
    is_reply,
    open_state,
    state_of,
)
from tickethub.services.agent_tasks import (
    EMPTY_STEP_BODY,
    REF_TASK,
    ApStore,
    ApUnitOfWork,
    ArtifactRecord,
    StepView,
    TaskTicket,
    new_uuid,
)
from tickethub.services.ports import Clock, Notifier, Store, UnitOfWork
from tickethub.services.ticket_writes import TicketWriter, WriteBatch
from tickethub.services.visibility import readable

SMALL_STEP = 2000  # characters of input (and of additional_input as JSON) put in the event


@dataclass(frozen=True, slots=True)
class StepInput:
    """A step to post: who posts it, to which task, and the body of ``POST .../steps``."""

    actor: Actor
    task_id: str
    text: str | None
    additional_input: dict[str, Any] | None
    step_id: str | None = None  # chosen beforehand (an in-hub worker's step); else new
    # An in-hub worker storing a step it is handling claims it for this long (renewed
    # while its handler runs), so no other hub process takes it; see ``task_worker``.
    lease_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class PostedStep:
    """A stored step, with its task's ticket as it was."""

    step: StepRecord
    ticket: TaskTicket
    seq: int = 0  # the event seq waiters were notified with when it was stored


@dataclass(frozen=True, slots=True)
class StepReply:
    """A reply to a step, by an agent worker that runs inside the hub."""

    actor: Actor
    posted: PostedStep
    text: str
    via: str
    data: Any = None


@dataclass(frozen=True, slots=True)
class StepExchange:
    """A step input and an in-hub worker's reply to it, stored in one go: the reply is
    the message right after the input."""

    input: StepInput
    actor: Actor
    text: str
    via: str
    data: Any = None


StepWrite = StepInput | StepReply | StepExchange
StepWritten = PostedStep | StepView | TickethubError


class StepWriter:
    """Writes step inputs and in-hub replies: a ``WritePart`` of the hub's
    ``TicketWriter`` (``TicketService.add_part``), or on its own with ``write``."""

    kinds: tuple[type, ...] = (StepInput, StepReply, StepExchange)

    def __init__(self, store: ApStore, clock: Clock, notifier: Notifier,
                 new_id: Callable[[], str] = new_uuid) -> None:
        self._store = store
        self._clock = clock
        self._notifier = notifier
        self._new_id = new_id

    def write(self, items: Sequence[StepWrite]) -> list[StepWritten]:
        """Write ``items`` in one transaction of their own; each result in its item's
        place: a ``PostedStep`` for a ``StepInput``, a ``StepView`` for a ``StepReply``
        or a ``StepExchange``, or the error that kept the item out."""
        store: Store = self._store  # an ApStore is a Store with an ``ap`` repository
        return TicketWriter(store, self._clock, self._notifier, [self]).write(items)

    @staticmethod
    def early(item: StepWrite) -> bool:
        # Replies first: each answers a step from an earlier transaction, and a reply
        # stored after a new step's input would answer that step too.
        return isinstance(item, StepReply)

    def write_part(self, uow: UnitOfWork, items: Sequence[tuple[int, StepWrite]],
                   batch: WriteBatch) -> None:
        ap_uow = self._store.join(uow)
        replies = [(i, x) for i, x in items if isinstance(x, StepReply)]
        posts = [(i, x) for i, x in items if isinstance(x, StepInput | StepExchange)]
        if replies:
            self._reply(ap_uow, replies, batch)
        if posts:
            self._post(ap_uow, posts, batch)

    def _post(self, uow: ApUnitOfWork, posts: list[tuple[int, StepInput | StepExchange]],
              batch: WriteBatch) -> None:
        results, now = batch.results, batch.now
        inputs = [x.input if isinstance(x, StepExchange) else x for _, x in posts]
        tickets = uow.ap.open_tasks(list({item.task_id for item in inputs}))
        accepted: list[_Accepted] = []
        for (index, write), item in zip(posts, inputs, strict=True):
            try:
                ticket = _open_task(uow, tickets, item)
            except TickethubError as exc:
                results[index] = exc
                continue
            trusted = item.actor.can_steer or item.actor.name == ticket.created_by
            accepted.append(_Accepted(index, item, ticket, trusted,
                                      item.step_id or self._new_id(),
                                      write if isinstance(write, StepExchange) else None))
        if not accepted:
            return
        drafts: list[MessageDraft] = []
        for a in accepted:
            item = a.item
            drafts.append(MessageDraft(
                a.ticket.id, item.actor.name, AP_CHANNEL,
                item.text if item.text and item.text.strip() else EMPTY_STEP_BODY,
                MessageKind.COMMENT, a.trusted,
                data={REF_TASK: item.task_id, "ap_step_id": a.step_id,
                      "additional_input": item.additional_input}))
            if a.reply is not None:  # the reply goes in right after its input
                drafts.append(MessageDraft(a.ticket.id, a.reply.actor.name, a.reply.via,
                                           a.reply.text, MessageKind.COMMENT,
                                           a.reply.actor.can_steer, data=a.reply.data))
        messages = iter(uow.messages.add_many(drafts, now))
        steps, new_events, posted = [], [], []
        claims: dict[str, datetime] = {}  # steps stored while an in-hub worker runs them
        for a in accepted:
            message = next(messages)
            step = StepRecord(a.step_id, a.item.task_id, a.item.text, a.item.additional_input,
                              message.id, a.item.actor.name, now)
            steps.append(step)
            batch.touched.add(a.ticket.id)
            new_events.append(NewEvent(
                EventType.MESSAGE_POSTED, a.ticket.id, a.ticket.path, a.item.actor.name,
                {"message_id": message.id, "via": AP_CHANNEL, "trusted": a.trusted,
                 REF_TASK: a.item.task_id, "ap_step_id": a.step_id,
                 **_small_step(a.item.text, a.item.additional_input)}))
            if a.reply is None:
                results[a.index] = PostedStep(step, a.ticket)
                posted.append(a.index)
                if a.item.lease_seconds is not None:
                    claims[a.step_id] = now + timedelta(seconds=a.item.lease_seconds)
                continue
            reply = next(messages)
            new_events.append(NewEvent(
                EventType.MESSAGE_POSTED, a.ticket.id, a.ticket.path, reply.author,
                _reply_event(reply)))
            # Nothing can sit between a step and a reply stored with it.
            counts = is_reply(reply, a.ticket, ())
            results[a.index] = StepView(open_state(step, reply if counts else None),
                                        a.item.task_id, [])
        uow.ap.add_steps(steps, claims=claims)
        batch.events += new_events

        def with_seq(seq: int) -> None:  # the seq waiters are notified with
            for index in posted:
                results[index] = replace(results[index], seq=seq)

        batch.after.append(with_seq)

    def _reply(self, uow: ApUnitOfWork, replies: list[tuple[int, StepReply]],
               batch: WriteBatch) -> None:
        results, now = batch.results, batch.now
        tickets = uow.ap.task_tickets(sorted({r.posted.ticket.id for _, r in replies}))
        batch.touched.update(tickets)
        messages = uow.messages.add_many([
            MessageDraft(r.posted.ticket.id, r.actor.name, r.via, r.text,
                         MessageKind.COMMENT, r.actor.can_steer, data=r.data)
            for _, r in replies], now)
        batch.events += [
            NewEvent(EventType.MESSAGE_POSTED, r.posted.ticket.id, r.posted.ticket.path,
                     r.actor.name, _reply_event(m))
            for (_, r), m in zip(replies, messages, strict=True)]
        candidates = uow.ap.replies_after(
            list(tickets), min(r.posted.step.input_message_id for _, r in replies))
        states = []
        for _, r in replies:
            step, ticket = r.posted.step, tickets[r.posted.ticket.id]
            reply = next((m for m in candidates if m.ticket_id == ticket.id
                          and m.id > step.input_message_id and is_reply(m, ticket, ())),
                         None)
            if ticket.waiting:
                states.append(open_state(step, reply))
                continue
            # Resolved meanwhile (a person answered): the whole ticket decides.
            latest = uow.ap.latest_step(step.task_id)
            resolved = uow.tickets.get(ticket.id)
            assert resolved is not None  # a foreign key keeps task and ticket together
            states.append(state_of(step, reply, resolved,
                                   latest is not None and latest.step_id == step.step_id))
        completed = [s.step_id for s in states if s.status == "completed"]
        artifacts: dict[str, list[ArtifactRecord]] = {}
        for artifact in uow.ap.artifacts_of_steps(completed) if completed else ():
            artifacts.setdefault(artifact.step_id or "", []).append(artifact)
        for (index, _), state in zip(replies, states, strict=True):
            results[index] = StepView(state, state.record.task_id,
                                      artifacts.get(state.step_id, []))


@dataclass(frozen=True, slots=True)
class _Accepted:
    """A step input that may be written, with what its write needs."""

    index: int
    item: StepInput
    ticket: TaskTicket
    trusted: bool
    step_id: str
    reply: StepExchange | None


def _open_task(uow: ApUnitOfWork, tickets: dict[str, TaskTicket], item: StepInput
               ) -> TaskTicket:
    """The task's ticket, if ``item``'s actor may post a step to the task now: a task it
    may not read is unknown (404), one it reads but does not own is 403."""
    ticket = tickets.get(item.task_id)
    if ticket is None or not readable(uow.tickets, item.actor, ticket):
        raise NotFound(f"task {item.task_id} does not exist", field="task_id")
    require_owner_or_responder(item.actor, ticket.created_by, "posting a step")
    if not ticket.waiting:
        raise Conflict(
            f"task {item.task_id} is finished (its ticket is {ticket.status.value}); "
            "no more steps can be posted", field="task_id", ticket_status=ticket.status.value,
        )
    return ticket


def _reply_event(reply: Message) -> dict[str, Any]:
    """The event data of a worker's reply: its data rides along, so the reply is on the
    record in the event log as in the thread."""
    data: dict[str, Any] = {"message_id": reply.id, "via": reply.via, "trusted": reply.trusted}
    if reply.data is not None:
        data["data"] = reply.data
    return data


def _small_step(text: str | None, additional_input: dict[str, Any] | None
                ) -> dict[str, Any]:
    """A small step's input, carried in its event so a worker needs no extra read."""
    if len(text or "") > SMALL_STEP or (
            additional_input and len(json_codec.dumps(additional_input)) > SMALL_STEP):
        return {}
    return {"ap_input": text, "ap_additional_input": additional_input}
