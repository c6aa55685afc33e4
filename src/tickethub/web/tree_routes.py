"""``/tree/{id}``: a subtree as nested, collapsible lists with status colours and counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from tickethub.api.deps import call, hub_of
from tickethub.domain.tickets import Ticket
from tickethub.errors import NotFound
from tickethub.services.tickets import MAX_TREE_DEPTH
from tickethub.web.page_route import PageRoute
from tickethub.web.render import page
from tickethub.web.session import Viewer, viewer
from tickethub.web.ticket_view import NoSuchTicket, page_ticket_id

router = APIRouter(include_in_schema=False, route_class=PageRoute)
Me = Annotated[Viewer, Depends(viewer)]
TicketId = Annotated[int, Depends(page_ticket_id)]


@dataclass
class Node:
    ticket: Ticket
    children: list[Node] = field(default_factory=list)
    total: int = 0  # descendants
    waiting: int = 0  # descendants still waiting

    def count(self) -> None:
        for child in self.children:
            child.count()
            self.total += 1 + child.total
            self.waiting += int(child.ticket.waiting) + child.waiting


def build_tree(tickets: list[Ticket]) -> Node:
    """Nest ``tickets`` (root first, parents before children) and count descendants."""
    nodes = {t.id: Node(t) for t in tickets}
    root = nodes[tickets[0].id]
    for t in tickets[1:]:
        parent = nodes.get(t.parent_id or -1)
        if parent is not None:
            parent.children.append(nodes[t.id])
    root.count()
    return root


@router.get("/tree/{ticket_id}")
async def tree(request: Request, ticket_id: TicketId, me: Me) -> Response:
    hub = hub_of(request)
    try:
        tickets = await call(hub.tickets.subtree, ticket_id, MAX_TREE_DEPTH, me.actor)
    except NotFound:  # unknown or not the viewer's to read: the page's own 404
        raise NoSuchTicket(ticket_id) from None
    return page(request, "tree.html", {"viewer": me, "root": build_tree(tickets)})
