"""Operations → ticket service calls, each leaving a history note with its evidence.

Contract: an operation is applied at most once per (Message-ID, position), also across
crashes and re-runs — adds use an idempotency key, and every other operation first looks
for its history note. The note (a ``via="mail"`` message, ``external_id`` =
``<Message-ID>#<n>``, ``data`` = ``{op, message_id, new_status, from_status, evidence,
applied, extractor}``) is what the tree export, the scorer and people read to see why the
tree changed, and what ``undo`` reverts.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from tickethub.domain.actors import Actor, ActorKind, Role
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket, TicketDraft
from tickethub.errors import TickethubError
from tickethub.mail.operations import Operation
from tickethub.mail.parse import ParsedMail, printable
from tickethub.services.ticket_writes import Post
from tickethub.services.tickets import TicketService

log = logging.getLogger(__name__)

MAIL_ACTOR = Actor(name="mail", role=Role.RESPONDER, kind=ActorKind.SYSTEM)
VIA = "mail"


@dataclass(frozen=True, slots=True)
class Applied:
    """What became of one operation: the ticket it touched and the status after it."""

    op: Operation
    ticket_id: int | None
    applied: bool
    status: str | None
    note: str = ""


class OperationApplier:
    def __init__(self, tickets: TicketService, *, defer_days: float = 7.0,
                 actor: Actor = MAIL_ACTOR) -> None:
        self._tickets = tickets
        self._defer = timedelta(days=defer_days)
        self.actor = actor
        self._seen: dict[int, Ticket] | None = None
        self._noted_keys: set[tuple[int, str]] | None = None
        self._notes: list[Post] | None = None

    # -- a bulk run's memory ------------------------------------------------------------------

    def remember(self, noted: Iterable[tuple[int, str]]) -> None:
        """Start a bulk run (``mail.build.ingest``): keep every ticket read or written
        until :meth:`stop`, and answer "is this operation's note written?" from ``noted``
        (every ``(ticket id, external_id)`` of the mail notes stored, read once) plus the
        notes written since, instead of reading the ticket's messages each time.

        Contract: the answers are the database's as long as nothing else changes these
        tickets during the run; whatever does (an email answer) must call :meth:`forget`.
        A change is still applied by the ticket services on the stored state, so a stale
        ticket here can only make a note say "not applied"; never a wrong write. The
        history notes are kept until :meth:`flush` and written together."""
        self._seen = {}
        self._noted_keys = set(noted)
        self._notes = []

    def forget(self) -> None:
        """Drop the tickets kept (they may have changed behind the run)."""
        if self._seen is not None:
            self._seen.clear()

    def flush(self) -> None:
        """Write the history notes kept since the last flush, in one transaction (one
        statement per table); a bulk run calls it before its batch commits, so a mail's
        notes commit with its record and its changes."""
        if not self._notes:
            return
        notes, self._notes = self._notes, []
        for post, result in zip(notes, self._tickets.write_items(notes), strict=True):
            if isinstance(result, Exception):
                log.warning("note %s on ticket %s not written: %s", post.external_id,
                            post.ticket_id, result)

    def stop(self) -> None:
        self._seen = None
        self._noted_keys = None
        self._notes = None

    def ticket(self, ticket_id: int) -> Ticket:
        """The ticket, from the run's memory when there is one."""
        if self._seen is not None:
            found = self._seen.get(ticket_id)
            if found is not None:
                return found
        ticket = self._tickets.get(ticket_id)
        self._keep(ticket)
        return ticket

    def _keep(self, ticket: Ticket) -> None:
        if self._seen is not None:
            self._seen[ticket.id] = ticket

    def apply(self, mail: ParsedMail, index: int, op: Operation, *, thread_root: str,
              default_parent: int | None, extractor: str, now: datetime) -> Applied:
        key = f"{mail.message_id}#{index}"
        if op.op == "ignore":
            return Applied(op, None, False, None)
        if op.op == "add":
            return self._add(mail, key, op, thread_root, default_parent, extractor, now)
        assert op.target is not None
        ticket = self.ticket(op.target)
        if self._noted(ticket.id, key):
            return Applied(op, ticket.id, False, ticket.status.value, "already applied")
        before = ticket.status
        if self._notes and any(n.ticket_id == ticket.id for n in self._notes):
            self.flush()  # its conversation keeps its order: the notes before the change
        changed, note = self._change(ticket, op, mail, now)
        applied = changed is not None
        after = changed if changed is not None else ticket
        self._keep(after)
        self._note(mail, key, after, op, extractor, before.value, applied, note)
        return Applied(op, ticket.id, applied, after.status.value, note)

    # -- add --------------------------------------------------------------------------------

    def _add(self, mail: ParsedMail, key: str, op: Operation, thread_root: str,
             default_parent: int | None, extractor: str, now: datetime) -> Applied:
        due = None
        if op.due is not None:
            due = datetime.combine(op.due, time(17, 0), tzinfo=UTC)
            due = due if due > now else None
        body = (op.summary or mail.own_text)[:20_000]
        refs: dict[str, Any] = {"email": mail.message_id, "email_thread": thread_root,
                                "raised_by": mail.from_addr or "unknown"}
        draft = TicketDraft(
            kind=Kind.QUESTION if op.kind == "question" else Kind.TASK,
            title=(printable(op.title or mail.subject).strip() or "(no subject)")[:300],
            body=body, parent_id=op.parent or default_parent, assignee=op.assignee,
            due_at=due, refs=refs,
        )
        ticket, created = self._tickets.ask(self.actor, draft, idempotency_key=f"mail:{key}")
        self._keep(ticket)
        if created or not self._noted(ticket.id, key):
            self._note(mail, key, ticket, op, extractor, None, True, "")
        return Applied(op, ticket.id, created, ticket.status.value)

    # -- changes ------------------------------------------------------------------------------

    def _change(self, ticket: Ticket, op: Operation, mail: ParsedMail,
                now: datetime) -> tuple[Ticket | None, str]:
        """(the ticket after the change, "") or (None, why it was not applied)."""
        target = op.resulting_status
        try:
            if op.op == "answer":
                if not ticket.waiting or ticket.kind is Kind.APPROVAL:
                    return None, f"not answered again: the issue is {ticket.status.value}"
                text = f"{mail.from_name or mail.from_addr}: {op.evidence}"
                return self._tickets.answer(self.actor, ticket.id, text, None, VIA), ""
            status = Status(target) if target else None
            if status is None or status is ticket.status:
                return None, "status unchanged"
            if status is Status.DEFERRED:
                return self._tickets.transition(
                    self.actor, ticket.id, status, VIA, until=now + self._defer,
                    reason=op.evidence[:500]), ""
            return self._tickets.transition(self.actor, ticket.id, status, VIA,
                                            reason=op.evidence[:500]), ""
        except TickethubError as exc:
            return None, f"{exc.code}: {exc.detail}"

    # -- history -------------------------------------------------------------------------------

    def _noted(self, ticket_id: int, key: str) -> bool:
        if self._noted_keys is not None:
            return (ticket_id, key) in self._noted_keys
        return any(m.external_id == key for m in self._tickets.messages(ticket_id))

    def _note(self, mail: ParsedMail, key: str, ticket: Ticket, op: Operation, extractor: str,
              from_status: str | None, applied: bool, note: str) -> None:
        who = mail.from_name or mail.from_addr or "someone"
        verb = {"add": f"raised this {op.kind}", "answer": "answered",
                "complete": "completed", "status": f"set the status to {op.new_status}"}[op.op]
        body = f"{who} {verb} (mail {mail.message_id}): “{op.evidence.strip()[:500]}”"
        if not applied and note:
            body += f" — not applied: {note}"
        data: dict[str, Any] = {"op": op.op, "message_id": mail.message_id,
                "new_status": ticket.status.value if op.op != "add" else None,
                "requested_status": op.resulting_status, "from_status": from_status,
                "evidence": op.evidence[:1000], "applied": applied, "extractor": extractor,
                "from": mail.from_addr}
        if op.due is not None:  # a deadline named by the mail (kept; see docs/mail.md)
            data["due"] = op.due.isoformat()
        if self._notes is None:
            self._tickets.post_message(self.actor, ticket.id, body, VIA, external_id=key,
                                       trusted=False, data=data)
            return
        self._notes.append(self._tickets.post_item(self.actor, ticket.id, body, VIA,
                                                   external_id=key, trusted=False, data=data))
        assert self._noted_keys is not None
        self._noted_keys.add((ticket.id, key))
