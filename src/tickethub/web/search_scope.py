"""Search in the inbox says where it looked: a search runs in the current view only, so
the page names that view and offers the matches in the other views (with their counts),
one click away. Only computed when there is a search (``q``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import urlencode

from tickethub.services.doors import WebDoor
from tickethub.services.inbox import VIEWS, InboxQuery

VIEW_LABELS = {"team": "Waiting on my team", "me": "Waiting on me", "all": "All tickets"}


@dataclass(frozen=True, slots=True)
class Elsewhere:
    view: str
    label: str
    count: str  # "12", "12,408"
    url: str


@dataclass(frozen=True, slots=True)
class SearchScope:
    q: str
    view_label: str
    elsewhere: list[Elsewhere]


def scope(hub: WebDoor, query: InboxQuery, filters: list[tuple[str, str]]
          ) -> SearchScope | None:
    """For a search, the other views that have matches (blocking: a worker thread)."""
    if not query.q:
        return None
    others = []
    for view in VIEWS:
        if view == query.view:
            continue
        total = hub.inbox.page(replace(query, view=view, cursor=None, limit=1)).total
        if total:
            params = [(k, v) for k, v in filters if k != "view"] + [("view", view)]
            count = f"{total:,}"
            others.append(Elsewhere(view, VIEW_LABELS[view], count, "/?" + urlencode(params)))
    return SearchScope(query.q, VIEW_LABELS.get(query.view, query.view), others)
