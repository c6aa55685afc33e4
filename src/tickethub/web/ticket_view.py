"""Everything the ticket page shows, gathered in one worker-thread hop through services."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tickethub.domain.actors import Actor
from tickethub.domain.events import Event
from tickethub.domain.ids import parse_id
from tickethub.domain.messages import Message
from tickethub.domain.status import Kind
from tickethub.domain.tickets import Ticket, TicketQuery
from tickethub.errors import NotFound
from tickethub.services.doors import WebDoor
from tickethub.web.links import OutsideLink, outside_links

MAX_CHILDREN = 200
MAX_AUDIT = 1000
_TOOL_KEYS = ("tool", "tool_name", "name", "action", "function")
_ARG_KEYS = ("arguments", "args", "input", "params", "parameters")


class NoSuchTicket(NotFound):
    """A page for a ticket that does not exist, or that the viewer may not read (the
    same 404, so a page does not tell which): the service's ``NotFound`` in the page's
    words."""

    def __init__(self, raw: object) -> None:
        super().__init__(f"There is no ticket {raw}.", field="ticket_id")


def page_ticket_id(ticket_id: str) -> int:
    """The ``{ticket_id}`` of a page's path. Anything that cannot be a ticket id ('abc',
    '²', past the database's range) is the same 404 page as an id that names nothing."""
    parsed = parse_id(ticket_id)
    if parsed is None:
        raise NoSuchTicket(ticket_id)
    return parsed


@dataclass(frozen=True, slots=True)
class Proposal:
    """An approval's proposed action, readably: the tool and its arguments when the
    proposal has that shape, else its top-level keys, else the raw value."""

    tool: str | None
    arguments: list[tuple[str, Any]] | None
    raw: Any


def describe_proposal(proposal: Any) -> Proposal:
    if isinstance(proposal, dict):
        tool = next((proposal[k] for k in _TOOL_KEYS if isinstance(proposal.get(k), str)),
                    None)
        args = next((proposal[k] for k in _ARG_KEYS if isinstance(proposal.get(k), dict)),
                    None)
        if tool is not None and args is not None:
            return Proposal(tool, list(args.items()), proposal)
        return Proposal(None, list(proposal.items()), proposal)
    return Proposal(None, None, proposal)


@dataclass(frozen=True, slots=True)
class TicketView:
    ticket: Ticket
    ancestors: list[Ticket]
    children: list[Ticket]
    more_children: bool
    messages: list[Message]
    events: list[Event]
    links: list[OutsideLink]
    proposal: Proposal | None
    last_seq: int  # read first: the page's live stream resumes from here


def _ancestor_ids(ticket: Ticket) -> list[int]:
    ids = [int(part) for part in ticket.path.strip("/").split("/") if part.isdigit()]
    return [i for i in ids if i != ticket.id]


def load(hub: WebDoor, ticket_id: int, viewer: Actor | None = None) -> TicketView:
    """The ticket page's data as ``viewer`` may read it (``domain.visibility``);
    raises ``NotFound`` for an unknown or unreadable ticket. Ancestors and children it
    may not read are left out."""
    last_seq = hub.events.last_seq()
    ticket = hub.tickets.get(ticket_id, viewer)
    ancestors = []
    for ancestor_id in _ancestor_ids(ticket):
        try:
            ancestors.append(hub.tickets.get(ancestor_id, viewer))
        except NotFound:  # above what the viewer reads
            continue
    children = hub.tickets.list(TicketQuery(parent_id=ticket.id, limit=MAX_CHILDREN), viewer)
    return TicketView(
        ticket=ticket,
        ancestors=ancestors,
        children=list(reversed(children.items)),
        more_children=children.next_cursor is not None,
        messages=hub.tickets.messages(ticket.id),
        events=hub.events.since(0, ticket_id=ticket.id, limit=MAX_AUDIT, viewer=viewer),
        links=outside_links(ticket.refs),
        proposal=describe_proposal(ticket.proposal) if ticket.kind is Kind.APPROVAL else None,
        last_seq=last_seq,
    )
