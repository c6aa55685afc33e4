"""Ticket use cases: ask, read, post, answer, approve, deny, transition, assign, label.

Every change runs in one store transaction that also appends its event, and wakes
waiters only after that transaction committed.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from tickethub.domain.actors import (
    Actor,
    require_not_own_approval,
    require_owner_or_responder,
    require_responder,
)
from tickethub.domain.events import EventType
from tickethub.domain.messages import Decision, Message, MessageDraft, MessageKind
from tickethub.domain.status import Kind, Status
from tickethub.domain.text import first_with_nul
from tickethub.domain.tickets import Answer, Ticket, TicketDraft, TicketQuery, normalize_labels
from tickethub.domain.visibility import reader
from tickethub.errors import ValidationFailed
from tickethub.group_commit import GroupCommit
from tickethub.services.answer_schema import SchemaChecker
from tickethub.services.ports import Clock, Notifier, Store, UnitOfWork
from tickethub.services.ticket_writes import (
    MAX_TREE_DEPTH,
    Ask,
    Asked,
    Change,
    Post,
    TicketWrite,
    TicketWriter,
    TicketWritten,
    WritePart,
)
from tickethub.services.visibility import not_found, readable

__all__ = ["MAX_TREE_DEPTH", "Page", "TicketService"]

JSONSchema = dict[str, Any] | None
_W = TypeVar("_W")

# Which targets the generic transition call may reach; answers go through their own calls.
TRANSITION_TARGETS = frozenset(
    {Status.OPEN, Status.IN_PROGRESS, Status.DEFERRED, Status.DONE, Status.CANCELLED}
)


@dataclass(frozen=True, slots=True)
class Page:
    items: builtins.list[Ticket]
    next_cursor: str | None



def _request_hash(draft: TicketDraft) -> str:
    canonical = json.dumps(asdict(draft), sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


class TicketService:
    """The ticket use cases. Thread-safe: every call opens its own transaction."""

    def __init__(self, store: Store, clock: Clock, notifier: Notifier,
                 schemas: SchemaChecker | None = None) -> None:
        self._store = store
        self._clock = clock
        self._notifier = notifier
        self._schemas = schemas or SchemaChecker()
        self._writer = TicketWriter(store, clock, notifier)
        # The hub's one write path: every door's writes (``TicketWrite`` items and the
        # items of the parts added with ``add_part``) in one group commit.
        # On SQLite a batch is first tried on the event loop itself (``write_now``):
        # no thread hop, which on one process with many connections costs more in GIL
        # waits than the commit itself.
        inline = self._writer.write_now if getattr(store, "writes_now", False) else None
        self._grouped: GroupCommit[Any, Any] = GroupCommit(self._writer.write, inline=inline)

    def bind(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Have the plain (thread) commands join the event loop's group commit on
        ``loop``; ``None`` when the loop stops (they then write alone)."""
        self._grouped.bind(loop)

    def add_part(self, part: WritePart) -> None:
        """Write a door's own kinds of items (``part.kinds``) in the one write path, in
        the same transactions as the ticket commands (``ticket_writes.WritePart``)."""
        self._writer.add_part(part)

    async def awrite(self, item: Any) -> Any:
        """Write a door's item (an ``Ask`` it made, or an item of a part added with
        ``add_part``), group-committed with everything else; its result, or its error
        raised."""
        return await self._grouped.submit(item)

    # -- reads ---------------------------------------------------------------------------
    # ``viewer``: the actor reading; a ticket it may not read (``domain.visibility``) is
    # ``NotFound`` and is left out of lists. ``None`` (the hub's own loops): no filter.

    def get(self, ticket_id: int, viewer: Actor | None = None) -> Ticket:
        with self._store.read() as uow:
            return self._load(uow, ticket_id, viewer=viewer)

    def list(self, query: TicketQuery, viewer: Actor | None = None) -> Page:
        if viewer is not None:
            query = replace(query, readable_by=reader(viewer))
        self._refuse_nul(label=query.label, assignee=query.assignee,
                         created_by=query.created_by, q=query.q, ref=query.ref)
        with self._store.read() as uow:
            rows = uow.tickets.list(replace(query, limit=query.limit + 1))
        more = len(rows) > query.limit
        items = rows[: query.limit]
        return Page(items, str(items[-1].id) if more and items else None)

    def subtree(self, ticket_id: int, depth: int, viewer: Actor | None = None
                ) -> builtins.list[Ticket]:
        """The ticket and its descendants down to ``depth`` levels, parents before
        children; for a ``viewer`` only the descendants it reads."""
        if depth < 0 or depth > MAX_TREE_DEPTH:
            raise ValidationFailed(f"depth must be between 0 and {MAX_TREE_DEPTH}", field="depth")
        with self._store.read() as uow:
            root = self._load(uow, ticket_id, viewer=viewer)
            name = reader(viewer) if viewer is not None else None
            return [root, *uow.tickets.subtree(root, depth, name)]

    def messages(self, ticket_id: int, viewer: Actor | None = None
                 ) -> builtins.list[Message]:
        with self._store.read() as uow:
            self._load(uow, ticket_id, viewer=viewer)
            return uow.messages.for_ticket(ticket_id)

    def check_schema(self, schema: Any, field: str) -> None:
        """Check a caller's JSON Schema as ``ask`` will, naming ``field`` on failure (for
        doors that build a ticket's schema out of several caller schemas)."""
        self._schemas.check_schema(schema, field)

    def schema_problem(self, value: Any, schema: JSONSchema, field: str) -> str | None:
        """What is wrong with ``value`` against ``schema`` (the first failure, naming its
        field), or ``None`` when it matches."""
        try:
            self._schemas.validate(value, schema, field)
        except ValidationFailed as exc:
            return exc.detail
        return None

    # -- commands ------------------------------------------------------------------------
    # Each command checks what needs no transaction, then goes through the one write path
    # (``services/ticket_writes.py``), group-committed with whatever else is being
    # written, and returns once its write is committed. The ``a``-prefixed ones are for
    # doors on the event loop; the plain ones for doors in worker threads (web forms,
    # GitHub, conversations, OpenAI), which join the same queue once the hub has
    # bound it to its loop (``bind``), and otherwise write in a transaction of their own.

    def ask(
        self, actor: Actor, draft: TicketDraft, idempotency_key: str | None = None, *,
        unchecked_proposal: bool = False,
    ) -> tuple[Ticket, bool]:
        """Open a ticket. Returns ``(ticket, created)``; a retried call with the same
        idempotency key returns the first ticket and ``created=False``.

        ``unchecked_proposal`` stores an approval's proposal even when it breaks the
        ticket's ``response_schema``: for proposals the asker did not write (an upstream
        model's tool call), which a person must see, then edit or deny. The caller flags
        such a ticket; ``approve`` refuses it unedited."""
        item = self._ask_item(actor, draft, idempotency_key, unchecked_proposal)
        asked = self._grouped.submit_blocking(item)
        assert isinstance(asked, Asked)
        return asked.ticket, asked.created

    async def aask(self, actor: Actor, draft: TicketDraft,
                   idempotency_key: str | None = None) -> tuple[Ticket, bool]:
        """``ask``, group-committed."""
        schema_free = draft.response_schema is None
        item = await self._prepared(schema_free, self._ask_item, actor, draft, idempotency_key)
        asked = await self._grouped.submit(item)
        assert isinstance(asked, Asked)
        return asked.ticket, asked.created

    def _ask_item(self, actor: Actor, draft: TicketDraft, idempotency_key: str | None,
                  unchecked_proposal: bool = False) -> Ask:
        draft = self._checked_draft(draft, check_proposal=not unchecked_proposal)
        if draft.due_at is not None and draft.due_at <= self._clock.now():
            raise ValidationFailed("due_at must be in the future", field="due_at")
        request_hash = _request_hash(draft) if idempotency_key else None
        return Ask(actor, draft, idempotency_key or None, request_hash)

    @staticmethod
    def _refuse_nul(**fields: str | Sequence[str] | None) -> None:
        """422 naming the first field holding a NUL (``domain/text.py``): doors without
        a wire schema (mail, GitHub, MCP) reach the store only through here."""
        field = first_with_nul(fields)
        if field is not None:
            raise ValidationFailed("must not contain NUL characters", field=field)

    def post_message(
        self,
        actor: Actor,
        ticket_id: int,
        body: str,
        via: str,
        *,
        external_id: str | None = None,
        trusted: bool | None = None,
        data: Any = None,
    ) -> Message:
        """Add a message. A repeated ``(via, external_id)`` returns the stored message and
        changes nothing. ``trusted`` may only lower what the actor's role allows."""
        return self._written(self._grouped.submit_blocking(self._post_item(
            actor, ticket_id, body, via, external_id, trusted, data)), Message)

    async def apost_message(self, actor: Actor, ticket_id: int, body: str, via: str, *,
                            data: Any = None) -> Message:
        """``post_message``, group-committed."""
        item = self._post_item(actor, ticket_id, body, via, None, None, data)
        return self._written(await self._grouped.submit(item), Message)

    def post_item(self, actor: Actor, ticket_id: int, body: str, via: str, *,
                  external_id: str | None = None, trusted: bool | None = None,
                  data: Any = None) -> Post:
        """``post_message``'s checks (raising as it does) without writing: the item, for
        a bulk door to write later with others in one :meth:`write_items`."""
        return self._post_item(actor, ticket_id, body, via, external_id, trusted, data)

    def write_items(self, items: Sequence[TicketWrite]) -> builtins.list[TicketWritten]:
        """Write items made by ``post_item`` in one transaction (``TicketWriter.write``):
        each result in its item's place, an error instead of raising."""
        return self._writer.write(items)

    def _post_item(self, actor: Actor, ticket_id: int, body: str, via: str,
                   external_id: str | None, trusted: bool | None, data: Any) -> Post:
        if not body.strip():
            raise ValidationFailed("a message needs a body", field="body")
        self._refuse_nul(body=body, external_id=external_id)
        return Post(actor, ticket_id, body, via, external_id, trusted, data)

    def answer(
        self,
        actor: Actor,
        ticket_id: int,
        text: str | None,
        data: Any,
        via: str,
        *,
        expected_version: int | None = None,
    ) -> Ticket:
        """Resolve a question, task or info ticket with text and/or structured data."""
        return self._change(self._answer_item(actor, ticket_id, text, data, via,
                                              expected_version))

    async def aanswer(self, actor: Actor, ticket_id: int, text: str | None, data: Any,
                      via: str, *, expected_version: int | None = None) -> Ticket:
        """``answer``, group-committed."""
        item = await self._prepared(data is None, self._answer_item, actor, ticket_id, text,
                                    data, via, expected_version)
        return self._written(await self._grouped.submit(item), Ticket)

    def _answer_item(self, actor: Actor, ticket_id: int, text: str | None, data: Any,
                     via: str, expected_version: int | None) -> Change:
        require_responder(actor, "answering")
        if (text is None or not text.strip()) and data is None:
            raise ValidationFailed("an answer needs text or data", field="text")
        self._refuse_nul(text=text)
        checked = self._prechecked(ticket_id, data, "data")

        def apply(ticket: Ticket, now: datetime) -> Ticket:
            if data is not None:
                self._recheck(checked, data, ticket, "data")
            else:
                self._require_no_schema(ticket)
            return ticket.moved_to(Status.ANSWERED, now,
                                   answer=Answer(text, data, actor.name, via, now))

        return self._resolution(actor, ticket_id, apply, via, Decision.ANSWERED,
                                expected_version)

    def approve(
        self,
        actor: Actor,
        ticket_id: int,
        comment: str | None,
        edited: Any,
        via: str,
        *,
        expected_version: int | None = None,
    ) -> Ticket:
        """Approve an approval, optionally with an edited proposal that must match its
        schema. A proposal that does not match it (one the asker did not write, see
        ``ask(..., unchecked_proposal=True)``) can only be approved edited."""
        return self._change(self._approve_item(actor, ticket_id, comment, edited, via,
                                               expected_version))

    async def aapprove(self, actor: Actor, ticket_id: int, comment: str | None, edited: Any,
                       via: str, *, expected_version: int | None = None) -> Ticket:
        """``approve``, group-committed."""
        item = await self._prepared(False, self._approve_item, actor, ticket_id, comment,
                                    edited, via, expected_version)
        return self._written(await self._grouped.submit(item), Ticket)

    def _approve_item(self, actor: Actor, ticket_id: int, comment: str | None, edited: Any,
                      via: str, expected_version: int | None) -> Change:
        require_responder(actor, "approving")
        self._refuse_nul(comment=comment)
        checked = self._prechecked(ticket_id, edited, "edited")
        if edited is None:
            self._require_valid_proposal(ticket_id)

        def apply(ticket: Ticket, now: datetime) -> Ticket:
            require_not_own_approval(actor, ticket.created_by)
            moved = ticket.moved_to(Status.APPROVED, now)
            if edited is not None:
                self._recheck(checked, edited, ticket, "edited")
            decided = edited if edited is not None else ticket.proposal
            return replace(moved, answer=Answer(comment, decided, actor.name, via, now))

        return self._resolution(actor, ticket_id, apply, via,
                                Decision.APPROVED if edited is None else Decision.EDITED,
                                expected_version)

    def deny(
        self,
        actor: Actor,
        ticket_id: int,
        reason: str | None,
        via: str,
        *,
        expected_version: int | None = None,
    ) -> Ticket:
        return self._change(self._deny_item(actor, ticket_id, reason, via, expected_version))

    async def adeny(self, actor: Actor, ticket_id: int, reason: str | None, via: str, *,
                    expected_version: int | None = None) -> Ticket:
        """``deny``, group-committed."""
        item = self._deny_item(actor, ticket_id, reason, via, expected_version)
        return self._written(await self._grouped.submit(item), Ticket)

    def _deny_item(self, actor: Actor, ticket_id: int, reason: str | None, via: str,
                   expected_version: int | None) -> Change:
        require_responder(actor, "denying")
        self._refuse_nul(reason=reason)

        def apply(ticket: Ticket, now: datetime) -> Ticket:
            require_not_own_approval(actor, ticket.created_by)
            return ticket.moved_to(Status.DENIED, now,
                                   answer=Answer(reason, None, actor.name, via, now))

        return self._resolution(actor, ticket_id, apply, via, Decision.DENIED,
                                expected_version)

    def transition(
        self,
        actor: Actor,
        ticket_id: int,
        target: Status,
        via: str,
        *,
        until: datetime | None = None,
        reason: str | None = None,
        expected_version: int | None = None,
    ) -> Ticket:
        """Move a ticket to in_progress, done, cancelled, deferred (``until`` a time) or
        back to open (reopen). Answers, approvals and expiry have their own calls."""
        return self._change(self._transition_item(actor, ticket_id, target, until, reason,
                                                  expected_version))

    async def atransition(self, actor: Actor, ticket_id: int, target: Status, via: str, *,
                          until: datetime | None = None, reason: str | None = None,
                          expected_version: int | None = None) -> Ticket:
        """``transition``, group-committed."""
        item = self._transition_item(actor, ticket_id, target, until, reason,
                                     expected_version)
        return self._written(await self._grouped.submit(item), Ticket)

    def _transition_item(self, actor: Actor, ticket_id: int, target: Status,
                         until: datetime | None, reason: str | None,
                         expected_version: int | None) -> Change:
        if target not in TRANSITION_TARGETS:
            raise ValidationFailed(
                f"transition to {target.value!r} is not allowed here; use one of "
                f"{sorted(t.value for t in TRANSITION_TARGETS)}",
                field="to",
            )
        if target is Status.DEFERRED and until is None:
            raise ValidationFailed("deferring needs 'until'", field="until")
        if until is not None and target is not Status.DEFERRED:
            raise ValidationFailed("'until' is only for deferring", field="until")
        self._refuse_nul(reason=reason)

        def apply(ticket: Ticket, now: datetime) -> Ticket:
            require_owner_or_responder(actor, ticket.created_by, f"moving a ticket to {target}")
            if until is not None and until <= now:
                raise ValidationFailed("'until' must be in the future", field="until")
            moved = ticket.moved_to(target, now)
            if target is Status.DEFERRED:
                return replace(moved, next_attention_at=until)
            if target is Status.OPEN and not ticket.waiting:  # reopened
                # A deadline already passed would expire it again at once: drop it.
                due = ticket.due_at if ticket.due_at and ticket.due_at > now else None
                return replace(moved, answer=None, next_attention_at=None, due_at=due)
            return replace(moved, next_attention_at=None)

        def event(before: Ticket, after: Ticket) -> tuple[EventType, dict[str, Any]]:
            data: dict[str, Any] = {"from": before.status.value, "to": after.status.value}
            if reason:
                data["reason"] = reason
            if until is not None:
                data["until"] = until.isoformat()
            return EventType.TICKET_TRANSITIONED, data

        return Change(actor, ticket_id, apply, event, expected_version)

    def assign(
        self, actor: Actor, ticket_id: int, assignee: str | None, *,
        expected_version: int | None = None,
    ) -> Ticket:
        return self._change(self._assign_item(actor, ticket_id, assignee, expected_version))

    async def aassign(self, actor: Actor, ticket_id: int, assignee: str | None, *,
                      expected_version: int | None = None) -> Ticket:
        """``assign``, group-committed."""
        item = self._assign_item(actor, ticket_id, assignee, expected_version)
        return self._written(await self._grouped.submit(item), Ticket)

    def _assign_item(self, actor: Actor, ticket_id: int, assignee: str | None,
                     expected_version: int | None) -> Change:
        if assignee is not None and not assignee.strip():
            raise ValidationFailed("assignee must be a name or null", field="assignee")
        self._refuse_nul(assignee=assignee)

        def apply(ticket: Ticket, now: datetime) -> Ticket:
            require_owner_or_responder(actor, ticket.created_by, "assigning")
            return ticket.changed(now, assignee=assignee.strip() if assignee else None)

        def event(before: Ticket, after: Ticket) -> tuple[EventType, dict[str, Any]]:
            return EventType.TICKET_ASSIGNED, {"from": before.assignee, "to": after.assignee}

        return Change(actor, ticket_id, apply, event, expected_version)

    def label(
        self, actor: Actor, ticket_id: int, add: Sequence[str], remove: Sequence[str], *,
        expected_version: int | None = None,
    ) -> Ticket:
        return self._change(self._label_item(actor, ticket_id, add, remove, expected_version))

    async def alabel(self, actor: Actor, ticket_id: int, add: Sequence[str],
                     remove: Sequence[str], *, expected_version: int | None = None) -> Ticket:
        """``label``, group-committed."""
        item = self._label_item(actor, ticket_id, add, remove, expected_version)
        return self._written(await self._grouped.submit(item), Ticket)

    def _label_item(self, actor: Actor, ticket_id: int, add: Sequence[str],
                    remove: Sequence[str], expected_version: int | None) -> Change:
        self._refuse_nul(add=add, remove=remove)
        remove_set = set(normalize_labels(tuple(remove)))

        def apply(ticket: Ticket, now: datetime) -> Ticket:
            require_owner_or_responder(actor, ticket.created_by, "labelling")
            labels = normalize_labels((*ticket.labels, *add))
            return ticket.changed(now, labels=tuple(x for x in labels if x not in remove_set))

        def event(before: Ticket, after: Ticket) -> tuple[EventType, dict[str, Any]]:
            return EventType.TICKET_LABELED, {
                "added": sorted(set(after.labels) - set(before.labels)),
                "removed": sorted(set(before.labels) - set(after.labels)),
                "labels": list(after.labels),
            }

        return Change(actor, ticket_id, apply, event, expected_version)

    def set_ref(
        self, actor: Actor, ticket_id: int, name: str, value: str | None,
    ) -> Ticket:
        """Set (or with ``value=None`` remove) the outside link ``refs[name]``, e.g. the
        GitHub issue a channel mirrors the ticket to. No event when nothing changes."""
        if not name.strip():
            raise ValidationFailed("a ref needs a name", field="name")

        def apply(ticket: Ticket, now: datetime) -> Ticket:
            require_owner_or_responder(actor, ticket.created_by, "linking")
            refs = {k: v for k, v in ticket.refs.items() if k != name}
            if value is not None:
                refs[name] = value
            return ticket.changed(now, refs=refs)

        def event(before: Ticket, after: Ticket) -> tuple[EventType, dict[str, Any]]:
            return EventType.TICKET_LINKED, {"name": name, "value": value}

        current = self.get(ticket_id)
        if current.refs.get(name) == value and (value is not None or name not in current.refs):
            return current
        return self._change(Change(actor, ticket_id, apply, event, None))

    # -- internals -----------------------------------------------------------------------

    @staticmethod
    def _load(uow: UnitOfWork, ticket_id: int, for_update: bool = False,
              viewer: Actor | None = None) -> Ticket:
        """The ticket; ``NotFound`` when unknown or, with a ``viewer``, unreadable to it."""
        ticket = uow.tickets.get(ticket_id, for_update=for_update)
        if ticket is None or (viewer is not None
                              and not readable(uow.tickets, viewer, ticket, ticket.assignee)):
            raise not_found(ticket_id)
        return ticket

    @staticmethod
    def _require_no_schema(ticket: Ticket) -> None:
        if ticket.response_schema is not None:
            raise ValidationFailed(
                "this ticket has a response_schema, so its answer needs 'data'", field="data"
            )

    def _prechecked(self, ticket_id: int, value: Any, field: str) -> JSONSchema:
        """Check ``value`` against the ticket's schema before the write transaction, so
        no check ever runs while the write lock is held; the schema it was checked
        against (a ticket's schema never changes, so the write need not check again)."""
        if value is None:
            return None
        schema = self.get(ticket_id).response_schema
        self._schemas.validate(value, schema, field)
        return schema

    def _recheck(self, checked: JSONSchema, value: Any, ticket: Ticket, field: str) -> None:
        if ticket.response_schema != checked:  # only if a schema could ever change
            self._schemas.validate(value, ticket.response_schema, field)

    def _require_valid_proposal(self, ticket_id: int) -> None:
        """Refuse approving a ticket's proposal unedited when it breaks the ticket's own
        schema (an ``unchecked_proposal``): what the agent gets must always match it.
        Checked before the write transaction; a ticket's proposal never changes."""
        ticket = self.get(ticket_id)
        if ticket.proposal is None:
            return
        problem = self.schema_problem(ticket.proposal, ticket.response_schema, "proposal")
        if problem is not None:
            raise ValidationFailed(
                f"the proposal does not match this ticket's response_schema ({problem}); "
                "approve it with 'edited' data that does, or deny it", field="edited",
            )

    def _checked_draft(self, draft: TicketDraft, check_proposal: bool = True) -> TicketDraft:
        if not draft.title.strip():
            raise ValidationFailed("a ticket needs a title", field="title")
        TicketService._refuse_nul(title=draft.title, body=draft.body, labels=draft.labels,
                                  assignee=draft.assignee)
        if draft.response_schema is not None:
            self._schemas.check_schema(draft.response_schema)
        if check_proposal and draft.kind is Kind.APPROVAL and draft.proposal is not None:
            self._schemas.validate(draft.proposal, draft.response_schema, "proposal")
        return replace(draft, title=draft.title.strip(), labels=normalize_labels(draft.labels))

    def _resolution(
        self,
        actor: Actor,
        ticket_id: int,
        apply: Callable[[Ticket, datetime], Ticket],
        via: str,
        decision: Decision,
        expected_version: int | None,
    ) -> Change:
        """Resolve with ``apply`` and keep the decision on the record: an ``answer``
        message with the text and data decided, and a ``ticket.answered`` event carrying
        both and the message's id, so a later reopen and answer loses nothing."""

        def event(before: Ticket, after: Ticket) -> tuple[EventType, dict[str, Any]]:
            answer = after.answer
            data: dict[str, Any] = {
                "from": before.status.value, "to": after.status.value,
                "outcome": after.outcome, "via": via,
                "text": answer.text if answer else None,
                "data": answer.data if answer else None,
            }
            if after.status is Status.APPROVED:
                data["edited"] = decision is Decision.EDITED
            return EventType.TICKET_ANSWERED, data

        def message(after: Ticket) -> MessageDraft:
            answer = after.answer
            return MessageDraft(after.id, actor.name, via,
                                (answer.text or "") if answer else "", MessageKind.ANSWER,
                                True, data=answer.data if answer else None, decision=decision)

        return Change(actor, ticket_id, apply, event, expected_version, message)

    def _change(self, item: Change) -> Ticket:
        return self._written(self._grouped.submit_blocking(item), Ticket)

    @staticmethod
    def _written(result: TicketWritten, kind: type[_W]) -> _W:
        """A write's result, or its error raised."""
        if isinstance(result, Exception):
            raise result
        assert isinstance(result, kind)
        return result

    async def _prepared(self, cheap: bool, make: Callable[..., _W], *args: Any) -> _W:
        """``make(*args)``: at once when ``cheap`` (no I/O, no schema check), else in the
        worker thread pool, off the event loop."""
        if cheap:
            return make(*args)
        return await asyncio.get_running_loop().run_in_executor(
            None, functools.partial(make, *args))
