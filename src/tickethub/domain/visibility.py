"""Who may read which tickets: the one read policy of every door.

* A responder or an admin reads every ticket; so does any token given the ``read:all``
  scope (``tickethub token create --scope read:all``).
* Everyone else (an agent) reads the tickets it created, everything below those in the
  tree, and the tickets assigned to it.

A ticket one may not read does not exist for them: every door answers 404 exactly as
for an unknown id, lists and event streams leave it out, so nothing leaks its existence.
Changing a ticket one can read but may not change is a 403 (``domain.actors``).

``store.visibility.readable_by`` is the same rule as one SQL filter; lists and event
pages filter in SQL with it, never in Python after loading.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tickethub.domain.actors import Actor
from tickethub.errors import ValidationFailed

READ_ALL = "read:all"
SCOPES: dict[str, str] = {
    READ_ALL: "read every ticket, message and event (an agent reads only its own tree "
              "and what is assigned to it without it)",
}


def checked_scopes(values: Iterable[str]) -> frozenset[str]:
    """``values`` as a set of known scopes; ``ValidationFailed`` naming ``scopes`` for an
    unknown one."""
    scopes = frozenset(v.strip() for v in values if v.strip())
    unknown = sorted(scopes - SCOPES.keys())
    if unknown:
        raise ValidationFailed(
            f"unknown scope {unknown[0]!r}; known scopes: {', '.join(sorted(SCOPES))}",
            field="scopes",
        )
    return scopes


def reader(actor: Actor) -> str | None:
    """``None`` when ``actor`` reads every ticket; else the name whose tickets (created,
    their subtrees, assigned) are all it reads."""
    if actor.can_steer or READ_ALL in actor.scopes:
        return None
    return actor.name


def can_read(actor: Actor, created_by: str, assignee: str | None, has_parent: bool,
             in_owned_tree: Callable[[], bool]) -> bool:
    """Whether ``actor`` reads the ticket with these fields. ``in_owned_tree`` (a store
    lookup, asked only when the fields alone do not decide) tells whether an ancestor was
    created by the actor."""
    name = reader(actor)
    if name is None or created_by == name or assignee == name:
        return True
    return has_parent and in_owned_tree()
