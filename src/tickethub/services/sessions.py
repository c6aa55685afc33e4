"""People's sign-in: passwords set by an operator, and browser sessions with CSRF tokens.

Contracts:

* ``set_password(name, password, role)`` creates the person if missing (with ``role``)
  and replaces their password; existing people keep their role.
* ``sign_in(name, password, client)`` returns a new :class:`Session` and the plain session
  token (shown to the browser once, stored only as a SHA-256), or raises
  ``Unauthenticated`` with the same message whether the name or the password was wrong.
  Failures are throttled per name and per client address (``services/throttle.py``):
  past the limit ``Throttled`` (429) comes before any password check, the same for names
  that exist and names that do not.
* ``resume(token)`` returns the live session or ``None`` when it is unknown, signed out
  or expired. A session lives ``ttl`` seconds and is renewed (one write) once less than
  half of that remains, so an active person stays signed in and reads stay read-only.
* ``sign_out(token)`` ends the session; calling it twice is harmless.
* ``login_link(name, ttl)`` makes a one-time sign-in token for an existing person;
  ``sign_in_with_link(token, client)`` spends it (once, before it expires) for a new
  session; unknown links are throttled per client address.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta
from typing import Protocol

from tickethub.domain.actors import Actor, ActorKind, Role
from tickethub.domain.records import Session as Session
from tickethub.errors import Conflict, NotFound, Unauthenticated, ValidationFailed
from tickethub.services.passwords import MIN_LENGTH, hash_password, verify_password
from tickethub.services.ports import Clock, SecretGenerator
from tickethub.services.throttle import Throttles, address_key, attempt

_NAME = re.compile(r"^[A-Za-z0-9_.@:+-]{1,100}$")
# Checking a made-up hash when the name is unknown keeps sign-in time the same either way.
_DUMMY_HASH = hash_password("not-a-real-password")


class SessionStore(Protocol):
    """The persistence port of this service (adapter: ``store/sessions_store.py``)."""

    def get_actor(self, name: str) -> Actor | None: ...
    def set_password(self, actor: Actor, password_hash: str, at: datetime) -> Actor:
        """Store the hash for ``actor``, creating the actor if it does not exist yet."""
        ...
    def password_of(self, name: str) -> tuple[Actor, str] | None: ...
    def add_session(self, session: Session) -> None: ...
    def get_session(self, token_hash: str) -> Session | None: ...
    def renew_session(self, token_hash: str, expires_at: datetime) -> None: ...
    def delete_session(self, token_hash: str) -> None: ...
    def delete_expired(self, now: datetime) -> int: ...
    def add_link(self, token_hash: str, actor: Actor, at: datetime,
                 expires_at: datetime) -> None: ...
    def take_link(self, token_hash: str, now: datetime) -> Actor | None:
        """The link's person if it exists and has not expired; the link is gone after."""
        ...


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class SessionService:
    def __init__(self, store: SessionStore, clock: Clock, secrets: SecretGenerator,
                 ttl_seconds: float = 7 * 24 * 3600, throttles: Throttles | None = None
                 ) -> None:
        self._store = store
        self._clock = clock
        self._secrets = secrets
        self._ttl = timedelta(seconds=ttl_seconds)
        self._throttles = throttles or Throttles(clock)

    def set_password(self, name: str, password: str, role: Role = Role.RESPONDER) -> Actor:
        if not _NAME.match(name):
            raise ValidationFailed("a name is 1-100 letters, digits or _.@:+-", field="name")
        if len(password) < MIN_LENGTH:
            raise ValidationFailed(f"a password has at least {MIN_LENGTH} characters",
                                   field="password")
        existing = self._store.get_actor(name)
        if existing is not None and existing.kind is not ActorKind.PERSON:
            raise Conflict(f"{name} is an {existing.kind}; only people sign in", field="name")
        actor = existing or Actor(name, role, ActorKind.PERSON)
        return self._store.set_password(actor, hash_password(password), self._clock.now())

    def sign_in(self, name: str, password: str, client: str | None = None
                ) -> tuple[Session, str]:
        name = name.strip()
        throttles = self._throttles
        with attempt((throttles.sign_in_accounts, f"account {name[:200]!r}"),
                     (throttles.sign_in_addresses, address_key(client)),
                     field="password", what="sign-ins"):
            found = self._store.password_of(name)
            stored = found[1] if found else _DUMMY_HASH
            if not verify_password(password, stored) or found is None:
                raise Unauthenticated("wrong username or password", field="password")
        return self._start(found[0])

    def login_link(self, name: str, ttl_seconds: float = 900) -> str:
        """A one-time sign-in token for ``name`` (a person), valid ``ttl_seconds``."""
        if not 60 <= ttl_seconds <= 7 * 24 * 3600:
            raise ValidationFailed("a link lives between 1 minute and 7 days",
                                   field="minutes")
        actor = self._store.get_actor(name)
        if actor is None:
            raise NotFound(f"there is no person named {name}", field="name")
        if actor.kind is not ActorKind.PERSON:
            raise Conflict(f"{name} is an {actor.kind}; only people sign in", field="name")
        now = self._clock.now()
        token = self._secrets.token()
        self._store.add_link(_digest(token), actor, now, now + timedelta(seconds=ttl_seconds))
        return token

    def sign_in_with_link(self, token: str, client: str | None = None
                          ) -> tuple[Session, str]:
        with attempt((self._throttles.link_addresses, address_key(client)),
                     field="token", what="sign-in links"):
            actor = self._store.take_link(_digest(token), self._clock.now()) if token else None
            if actor is None:
                raise Unauthenticated("this sign-in link is unknown, used or expired",
                                      field="token")
        return self._start(actor)

    def _start(self, actor: Actor) -> tuple[Session, str]:
        now = self._clock.now()
        token = self._secrets.token()
        session = Session(_digest(token), actor, self._secrets.token(), now, now + self._ttl)
        self._store.delete_expired(now)
        self._store.add_session(session)
        return session, token

    def resume(self, token: str | None) -> Session | None:
        if not token:
            return None
        session = self._store.get_session(_digest(token))
        now = self._clock.now()
        if session is None or session.expires_at <= now:
            return None
        if session.expires_at - now < self._ttl / 2:
            expires = now + self._ttl
            self._store.renew_session(session.token_hash, expires)
            return Session(session.token_hash, session.actor, session.csrf,
                           session.created_at, expires)
        return session

    def alive(self, token: str | None) -> bool:
        """Whether ``token`` names a live session, without renewing it: an open page
        asking whether it is still signed in must not keep an idle session alive."""
        if not token:
            return False
        session = self._store.get_session(_digest(token))
        return session is not None and session.expires_at > self._clock.now()

    def sign_out(self, token: str | None) -> None:
        if token:
            self._store.delete_session(_digest(token))
