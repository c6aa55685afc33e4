"""Saved views: a person's named inbox filters (``view=me&kind=approval&sort=urgent``).

A saved view is only a name and a query string; the inbox reads the query string with the
same parser as a typed URL, so a saved view can never hold a filter the URL could not.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from tickethub.domain.actors import Actor
from tickethub.domain.records import SavedView as SavedView
from tickethub.domain.text import first_with_nul
from tickethub.errors import ValidationFailed
from tickethub.services.ports import Clock

MAX_VIEWS = 50
MAX_NAME = 60
MAX_QUERY = 1000


class SavedViewStore(Protocol):
    """Adapter: ``store/web_marks.py``."""

    def views_of(self, actor_id: int) -> list[SavedView]:
        """The person's views, by name."""
        ...

    def put(self, actor_id: int, view: SavedView, at: datetime, limit: int) -> bool:
        """Insert or replace by name; ``False`` (nothing stored) when the person already
        has ``limit`` other views."""
        ...

    def delete(self, actor_id: int, name: str) -> None:
        ...


class SavedViewService:
    def __init__(self, store: SavedViewStore, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def list(self, actor: Actor) -> list[SavedView]:
        return [] if actor.id is None else self._store.views_of(actor.id)

    def save(self, actor: Actor, name: str, query: str) -> SavedView:
        """Save (or replace) the view ``name``. Raises ``ValidationFailed`` naming the
        field for an empty or too long name or query, or past :data:`MAX_VIEWS`."""
        name, query = name.strip(), query.strip().lstrip("?")
        if not name:
            raise ValidationFailed("give the view a name", field="name")
        if len(name) > MAX_NAME:
            raise ValidationFailed(f"a view's name is at most {MAX_NAME} characters",
                                   field="name")
        if len(query) > MAX_QUERY:
            raise ValidationFailed(f"a view's filters are at most {MAX_QUERY} characters",
                                   field="query")
        bad = first_with_nul({"name": name, "query": query})
        if bad:
            raise ValidationFailed(f"a view's {bad} must not contain NUL characters",
                                   field=bad)
        if actor.id is None:
            raise ValidationFailed("saved views belong to a stored person", field="actor")
        view = SavedView(name, query)
        if not self._store.put(actor.id, view, self._clock.now(), MAX_VIEWS):
            raise ValidationFailed(f"at most {MAX_VIEWS} saved views; delete one first",
                                   field="name")
        return view

    def delete(self, actor: Actor, name: str) -> None:
        if actor.id is not None:
            self._store.delete(actor.id, name.strip())
