"""Tickets in chat: a hub ticket posted into a room lives in that post's thread.

A chat channel posts the ticket and sets its ref ``chat_thread`` to the thread key.
In such a thread (routing rule 0, before the conversation rules), a message from an
authorized responder (``chat_responders``) answers the ticket — free text; JSON when
the ticket has a ``response_schema``; ``approve``/``deny [reason]`` for an approval —
which wakes a waiting agent like an answer from any other channel. Anyone else's text is
kept on the ticket as an untrusted message, never obeyed.
"""

from __future__ import annotations

import json
from typing import Any

from tickethub.domain.actors import Actor
from tickethub.domain.status import Kind
from tickethub.domain.tickets import Ticket, TicketQuery
from tickethub.errors import TickethubError
from tickethub.services.tickets import TicketService

THREAD_REF = "chat_thread"
APPROVE = frozenset({"approve", "approved", "yes", "lgtm"})
DENY = frozenset({"deny", "denied", "no", "reject"})


def ticket_of_thread(tickets: TicketService, thread_key: str) -> Ticket | None:
    """The posted ticket this thread carries (a conversation's own ticket is not one)."""
    page = tickets.list(TicketQuery(ref=(THREAD_REF, thread_key), limit=5))
    posted = [t for t in page.items if "chat_participant" not in t.refs]
    return posted[0] if posted else None


def answer_from_chat(tickets: TicketService, actor: Actor, ticket: Ticket, text: str,
                     via: str, event_id: str) -> str:
    """Apply ``actor``'s message to ``ticket``; return what to tell the thread."""
    if not actor.can_steer or not ticket.waiting:
        tickets.post_message(actor, ticket.id, text, via, external_id=event_id,
                             trusted=False)
        return ""
    try:
        if ticket.kind is Kind.APPROVAL:
            word, _, rest = text.strip().partition(" ")
            if word.lower().rstrip(".!") in APPROVE:
                tickets.approve(actor, ticket.id, rest or None, None, via)
                return f"Approved ticket #{ticket.id}."
            if word.lower().rstrip(".!") in DENY:
                tickets.deny(actor, ticket.id, rest or None, via)
                return f"Denied ticket #{ticket.id}."
            tickets.post_message(actor, ticket.id, text, via, external_id=event_id)
            return "Noted. To decide, say “approve” or “deny <reason>”."
        data: Any = None
        if ticket.response_schema is not None:
            try:
                data = json.loads(text)
            except ValueError:
                return "This ticket needs a JSON answer matching its schema."
        tickets.answer(actor, ticket.id, None if data is not None else text, data, via)
    except TickethubError as exc:
        return f"Couldn't answer ticket #{ticket.id}: {exc}"
    return f"Answered ticket #{ticket.id}."
