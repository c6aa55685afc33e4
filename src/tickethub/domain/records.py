"""Records of the hub's own bookkeeping that the store keeps: API tokens, outbound
deliveries and webhook subscriptions. Plain values; the store and the services share
them (``services.ports`` names the repositories that keep them)."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import datetime

from tickethub.domain.actors import Actor


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """An API token as listed: never its secret, only the prefix shown to people."""

    id: int
    actor: Actor
    name: str
    prefix: str
    created_at: datetime
    revoked_at: datetime | None
    scopes: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Delivery:
    """One event to hand to one outside target, at most once per ``idempotency_key``;
    ``status`` is ``pending``, ``delivered`` or ``dead``."""

    id: int
    channel: str
    target: str
    event_seq: int
    idempotency_key: str
    status: str
    attempts: int
    next_attempt_at: datetime
    last_error: str | None


@dataclass(frozen=True, slots=True)
class Webhook:
    """A subscription: events of ``event_types`` are POSTed to ``url``, signed with
    ``secret``; a deleted one stays, inactive."""

    id: int
    url: str
    secret: str
    event_types: tuple[str, ...]
    created_by: str
    created_at: datetime
    active: bool = True


@dataclass(frozen=True, slots=True)
class Session:
    token_hash: str
    actor: Actor
    csrf: str
    created_at: datetime
    expires_at: datetime

    def csrf_ok(self, sent: str | None) -> bool:
        return bool(sent) and hmac.compare_digest(self.csrf.encode(), (sent or "").encode())


@dataclass(frozen=True, slots=True)
class SavedView:
    name: str
    query: str  # a URL query string without the leading "?"
