"""Actors and the policy of who may do what.

An actor is an agent, a person or the system. Its role decides what it may do:

* ``agent``: ask, post messages, wait, and close or cancel its own tickets;
* ``responder``: everything an agent may do, plus answer, approve, deny, assign, label
  and move any ticket — a responder's answer steers the agent;
* ``admin``: everything, plus tokens and webhooks.

Nobody approves or denies an approval they asked for themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tickethub.errors import Forbidden


class Role(StrEnum):
    AGENT = "agent"
    RESPONDER = "responder"
    ADMIN = "admin"


class ActorKind(StrEnum):
    AGENT = "agent"
    PERSON = "person"
    SYSTEM = "system"


@dataclass(frozen=True, slots=True)
class Actor:
    name: str
    role: Role
    kind: ActorKind = ActorKind.AGENT
    id: int | None = None
    # What the token it came with adds to the role (``domain.visibility.SCOPES``).
    scopes: frozenset[str] = frozenset()

    @property
    def can_steer(self) -> bool:
        """True when this actor's answers are handed to agents as answers."""
        return self.role in (Role.RESPONDER, Role.ADMIN)


SYSTEM = Actor(name="system", role=Role.ADMIN, kind=ActorKind.SYSTEM)


def require_responder(actor: Actor, action: str) -> None:
    if not actor.can_steer:
        raise Forbidden(f"{action} needs the responder or admin role; {actor.name} is {actor.role}")


def require_admin(actor: Actor, action: str) -> None:
    if actor.role is not Role.ADMIN:
        raise Forbidden(f"{action} needs the admin role; {actor.name} is {actor.role}")


def require_owner_or_responder(actor: Actor, created_by: str, action: str) -> None:
    if actor.can_steer or actor.name == created_by:
        return
    raise Forbidden(f"{action} is for the ticket's creator or a responder; {actor.name} is neither")


def require_not_own_approval(actor: Actor, created_by: str) -> None:
    if actor.name == created_by:
        raise Forbidden(f"{actor.name} asked for this approval and cannot decide it")
