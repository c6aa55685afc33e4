"""Ticket use cases: ask, read, post, answer, approve, deny, transition, assign, label.

Every change runs in one store transaction that also appends its event, and wakes
waiters only after that transaction committed.
"""

from __future__ import annotations

import builtins
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

from tickethub.domain.actors import (
    Actor,
    require_not_own_approval,
    require_owner_or_responder,
    require_responder,
)
from tickethub.domain.events import EventType, NewEvent
from tickethub.domain.messages import Decision, Message, MessageDraft, MessageKind
from tickethub.domain.status import Kind, Status
from tickethub.domain.text import first_with_nul
from tickethub.domain.tickets import Answer, Ticket, TicketDraft, TicketQuery, normalize_labels
from tickethub.domain.visibility import reader
from tickethub.errors import (
    IdempotencyKeyReused,
    NotFound,
    StaleVersion,
    ValidationFailed,
)
from tickethub.services.answer_schema import SchemaChecker
from tickethub.services.ports import Clock, Notifier, Store, UnitOfWork
from tickethub.services.visibility import not_found, readable

MAX_TREE_DEPTH = 32
JSONSchema = dict[str, Any] | None
_OPTIMISTIC_RETRIES = 5

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
        draft = self._checked_draft(draft, check_proposal=not unchecked_proposal)
        request_hash = _request_hash(draft) if idempotency_key else None
        now = self._clock.now()
        if draft.due_at is not None and draft.due_at <= now:
            raise ValidationFailed("due_at must be in the future", field="due_at")
        with self._store.write() as uow:
            if idempotency_key:
                found = uow.tickets.find_idempotent(actor.name, idempotency_key)
                if found is not None:
                    ticket, stored_hash = found
                    if stored_hash != request_hash:
                        raise IdempotencyKeyReused(
                            "this Idempotency-Key was used for a different request",
                            field="Idempotency-Key",
                        )
                    return ticket, False
            if draft.parent_id is not None:
                parent = uow.tickets.get(draft.parent_id)
                if parent is None or not readable(uow.tickets, actor, parent, parent.assignee):
                    raise NotFound(f"parent ticket {draft.parent_id} does not exist",
                                   field="parent_id")
                if parent.path.count("/") - 1 >= MAX_TREE_DEPTH:
                    raise ValidationFailed("the ticket tree is too deep", field="parent_id")
            ticket = uow.tickets.add(draft, actor.name, now, idempotency_key, request_hash)
            event = uow.events.append(
                NewEvent(EventType.TICKET_CREATED, ticket.id, ticket.path, actor.name,
                         {"kind": ticket.kind.value, "title": ticket.title,
                          "parent_id": ticket.parent_id, "status": ticket.status.value}),
                now,
            )
        self._notifier.notify(event.seq, [ticket])
        return ticket, True

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
        if not body.strip():
            raise ValidationFailed("a message needs a body", field="body")
        self._refuse_nul(body=body, external_id=external_id)
        now = self._clock.now()
        with self._store.write() as uow:
            ticket = self._load(uow, ticket_id, viewer=actor)
            if external_id is not None:
                existing = uow.messages.find_external(via, external_id)
                if existing is not None:
                    return existing
            allowed = actor.can_steer or actor.name == ticket.created_by
            message = uow.messages.add(
                ticket.id, actor.name, via, body, MessageKind.COMMENT,
                allowed and (trusted is not False), now, external_id, data,
            )
            event = uow.events.append(
                NewEvent(EventType.MESSAGE_POSTED, ticket.id, ticket.path, actor.name,
                         {"message_id": message.id, "via": via, "trusted": message.trusted}),
                now,
            )
        # Only a message was added: the ticket's own state is unchanged, so nobody
        # watching deadlines or statuses needs to wake; its waiters read back the news.
        self._notifier.notify(event.seq, (), touched=[ticket.id])
        return message

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
            moved = ticket.moved_to(Status.ANSWERED, now)
            return replace(moved, answer=Answer(text, data, actor.name, via, now))

        return self._resolve(actor, ticket_id, apply, via, Decision.ANSWERED,
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

        return self._resolve(actor, ticket_id, apply, via,
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
        require_responder(actor, "denying")
        self._refuse_nul(reason=reason)

        def apply(ticket: Ticket, now: datetime) -> Ticket:
            require_not_own_approval(actor, ticket.created_by)
            moved = ticket.moved_to(Status.DENIED, now)
            return replace(moved, answer=Answer(reason, None, actor.name, via, now))

        return self._resolve(actor, ticket_id, apply, via, Decision.DENIED,
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

        return self._mutate(actor, ticket_id, apply, event, expected_version)

    def assign(
        self, actor: Actor, ticket_id: int, assignee: str | None, *,
        expected_version: int | None = None,
    ) -> Ticket:
        if assignee is not None and not assignee.strip():
            raise ValidationFailed("assignee must be a name or null", field="assignee")
        self._refuse_nul(assignee=assignee)

        def apply(ticket: Ticket, now: datetime) -> Ticket:
            require_owner_or_responder(actor, ticket.created_by, "assigning")
            return ticket.changed(now, assignee=assignee.strip() if assignee else None)

        def event(before: Ticket, after: Ticket) -> tuple[EventType, dict[str, Any]]:
            return EventType.TICKET_ASSIGNED, {"from": before.assignee, "to": after.assignee}

        return self._mutate(actor, ticket_id, apply, event, expected_version)

    def label(
        self, actor: Actor, ticket_id: int, add: Sequence[str], remove: Sequence[str], *,
        expected_version: int | None = None,
    ) -> Ticket:
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

        return self._mutate(actor, ticket_id, apply, event, expected_version)

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
        return self._mutate(actor, ticket_id, apply, event, None)

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

    def _resolve(
        self,
        actor: Actor,
        ticket_id: int,
        apply: Callable[[Ticket, datetime], Ticket],
        via: str,
        decision: Decision,
        expected_version: int | None,
    ) -> Ticket:
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

        def record(uow: UnitOfWork, after: Ticket, now: datetime) -> dict[str, Any]:
            answer = after.answer
            [message] = uow.messages.add_many([MessageDraft(
                after.id, actor.name, via, (answer.text or "") if answer else "",
                MessageKind.ANSWER, True, data=answer.data if answer else None,
                decision=decision)], now)
            return {"message_id": message.id}

        return self._mutate(actor, ticket_id, apply, event, expected_version, record=record)

    def _mutate(
        self,
        actor: Actor,
        ticket_id: int,
        apply: Callable[[Ticket, datetime], Ticket],
        describe: Callable[[Ticket, Ticket], tuple[EventType, dict[str, Any]]],
        expected_version: int | None,
        record: Callable[[UnitOfWork, Ticket, datetime], dict[str, Any]] | None = None,
    ) -> Ticket:
        """Load, check the version, apply, write with a compare-and-set and append the event.

        ``record`` writes what goes with the change (a decision's message) once the
        compare-and-set won, in the same transaction; what it returns joins the event's
        data. Without an explicit ``expected_version`` a lost compare-and-set race is
        retried on fresh state, so concurrent callers see the typed error the new state
        implies."""
        for _ in range(_OPTIMISTIC_RETRIES):
            now = self._clock.now()
            with self._store.write() as uow:
                before = self._load(uow, ticket_id, for_update=True, viewer=actor)
                if expected_version is not None and expected_version != before.version:
                    raise StaleVersion(expected_version, before.version)
                after = apply(before, now)
                if not uow.tickets.update(after, before.version):
                    if expected_version is not None:
                        current = uow.tickets.get(ticket_id)
                        raise StaleVersion(expected_version, current.version if current else 0)
                    continue
                kind, data = describe(before, after)
                if record is not None:
                    data = {**data, **record(uow, after, now)}
                event = uow.events.append(
                    NewEvent(kind, after.id, after.path, actor.name, data), now
                )
            self._notifier.notify(event.seq, [after])
            return after
        raise StaleVersion(expected_version or 0, -1)
