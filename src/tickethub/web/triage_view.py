"""What the triage page shows, gathered in one worker-thread hop through services:
the inbox page (list), its per-view counts, the open ticket (pane), read marks and the
person's saved views."""

from __future__ import annotations

from dataclasses import dataclass

from tickethub.domain.actors import Actor
from tickethub.domain.messages import Message
from tickethub.domain.status import Kind
from tickethub.domain.tickets import Ticket
from tickethub.errors import NotFound
from tickethub.services.doors import WebDoor
from tickethub.services.inbox import InboxPage, InboxQuery, View
from tickethub.services.saved_views import SavedView
from tickethub.web.ticket_view import Proposal, describe_proposal

PANE_MESSAGES = 20  # the pane shows the latest messages; the full page shows all


@dataclass(frozen=True, slots=True)
class Pane:
    """The ticket on the right: enough to decide without leaving the list."""

    ticket: Ticket
    messages: list[Message]
    more_messages: int
    proposal: Proposal | None


@dataclass(frozen=True, slots=True)
class TriageData:
    result: InboxPage
    counts: dict[View, int]
    pane: Pane | None
    read: set[int]
    saved: list[SavedView]
    last_seq: int


def load_pane(hub: WebDoor, ticket_id: int, viewer: Actor, mark_read: bool) -> Pane:
    """The pane of one ticket ``viewer`` reads (``NotFound`` otherwise); opening it marks
    it read for ``viewer`` when ``mark_read``."""
    ticket = hub.tickets.get(ticket_id, viewer)
    messages = hub.tickets.messages(ticket.id)
    if mark_read:
        hub.reads.mark(viewer, [ticket.id])
    proposal = describe_proposal(ticket.proposal) if ticket.kind is Kind.APPROVAL else None
    return Pane(ticket, messages[-PANE_MESSAGES:], max(0, len(messages) - PANE_MESSAGES),
                proposal)


def load(hub: WebDoor, query: InboxQuery, viewer: Actor, open_id: int | None,
         explicit: bool) -> TriageData:
    """The page. ``open_id`` (or else the first row) fills the pane; it is marked read
    only when the person chose it (``explicit``), not when it is merely first."""
    last_seq = hub.events.last_seq()
    result = hub.inbox.page(query)
    counts = hub.inbox.view_counts(query)
    pane = None
    target = open_id if open_id is not None else (result.items[0].id if result.items
                                                  else None)
    if target is not None:
        try:
            pane = load_pane(hub, target, viewer, mark_read=explicit)
        except NotFound:
            pane = None
    read = hub.reads.read_among(viewer, [t.id for t in result.items])
    return TriageData(result, counts, pane, read, hub.saved_views.list(viewer), last_seq)
