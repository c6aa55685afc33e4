"""Undoing what one mail did to the tree, from its history notes.

For each operation the mail applied (newest first): an issue it raised is cancelled, and a
status it changed goes back to the status the note recorded before it (a status only an
answer or approval can set, like ``answered``, goes back to ``open``). Each undo leaves
its own note (``op="undo"``), and the tree export drops the undone operations from the
history. The mail stays recorded as processed, so ingesting it again does not redo it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from tickethub.domain.status import Status
from tickethub.errors import NotFound, TickethubError
from tickethub.mail.apply import MAIL_ACTOR, VIA
from tickethub.services.mail_state import MailState
from tickethub.services.tickets import TicketService


@dataclass(frozen=True, slots=True)
class Undone:
    ticket_id: int
    op: str
    result: str


def undo_mail(tickets: TicketService, state: MailState, message_id: str, now: datetime, *,
              defer_days: float = 7.0) -> list[Undone]:
    record = state.get(message_id)
    if record is None:
        raise NotFound(f"no processed mail has Message-ID {message_id}", field="message_id")
    done: list[Undone] = []
    for ticket_id in record.ticket_ids:
        notes = [m for m in tickets.messages(ticket_id)
                 if m.via == VIA and isinstance(m.data, dict)
                 and m.data.get("message_id") == message_id]
        undone = {m.data.get("undoes") for m in notes if m.data.get("op") == "undo"}
        for note in reversed(notes):
            data = note.data
            if data.get("op") == "undo" or note.external_id in undone or not data.get("applied"):
                continue
            result = _revert(tickets, ticket_id, data, now, defer_days)
            tickets.post_message(
                MAIL_ACTOR, ticket_id, f"Undid {data['op']} of mail {message_id}: {result}",
                VIA, external_id=f"{note.external_id}#undo", trusted=False,
                data={"op": "undo", "undoes": note.external_id, "message_id": message_id,
                      "result": result})
            done.append(Undone(ticket_id, str(data["op"]), result))
    return done


def _revert(tickets: TicketService, ticket_id: int, data: dict[str, object], now: datetime,
            defer_days: float) -> str:
    ticket = tickets.get(ticket_id)
    if data["op"] == "add":
        target, until = Status.CANCELLED, None
    else:
        before = data.get("from_status")
        if not isinstance(before, str) or before == ticket.status.value:
            return "status unchanged"
        target = Status(before)
        until = now + timedelta(days=defer_days) if target is Status.DEFERRED else None
        if target not in (Status.OPEN, Status.IN_PROGRESS, Status.DEFERRED, Status.DONE,
                          Status.CANCELLED):
            target, until = Status.OPEN, None
    if ticket.status is target:
        return f"already {target.value}"
    try:
        tickets.transition(MAIL_ACTOR, ticket_id, target, VIA, until=until,
                           reason="undo of a mail's operation")
    except TickethubError as exc:
        return f"not possible: {exc.detail}"
    return f"{ticket.status.value} → {target.value}"
