"""Actors and API tokens: bootstrap the admin, create and revoke tokens, authenticate.

Tokens are random and long, so a SHA-256 of the token is what is stored and looked up;
the plain token is shown once, when it is made.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from tickethub.domain.actors import Actor, ActorKind, Role, require_admin
from tickethub.domain.visibility import checked_scopes
from tickethub.errors import Conflict, NotFound, Unauthenticated, ValidationFailed
from tickethub.services.ports import Clock, SecretGenerator, Store, TokenRecord
from tickethub.services.throttle import Throttles, address_key, attempt

_NAME = re.compile(r"^[A-Za-z0-9_.@:+-]{1,100}$")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class AuthService:
    def __init__(self, store: Store, clock: Clock, secrets: SecretGenerator,
                 cache_seconds: float = 0.0, throttles: Throttles | None = None) -> None:
        self._store = store
        self._throttles = throttles or Throttles(clock)
        self._clock = clock
        self._secrets = secrets
        # token hash → (actor, valid until): saves a database read per request. A token
        # revoked here is dropped at once, and the other hub processes are told
        # (``share_revocations``); should the news not reach one, the token works there
        # for up to ``cache_seconds`` more.
        self._cache_seconds = cache_seconds
        self._cache: dict[str, tuple[Actor, datetime]] = {}
        self._revoked: Callable[[str], None] = lambda message: None
        # One check per token at a time: the requests that come with it meanwhile (a
        # client opening 32 connections at once, or all of them when its cache entry
        # ends) wait for that check and take its cached result, instead of each counting
        # as an attempt against the client's address and tripping the throttle.
        self._checks: dict[str, threading.Lock] = {}
        self._checks_guard = threading.Lock()

    def bootstrap_admin(self, configured_token: str | None) -> str | None:
        """Make sure an admin exists. Returns a newly generated admin token to show once,
        or ``None`` when nothing new was generated (an admin existed, or the configured
        token was registered)."""
        now = self._clock.now()
        with self._store.write() as uow:
            # Two hub processes starting on one new database would both create "admin".
            uow.actors.lock_for_bootstrap()
            if configured_token and uow.actors.by_token_hash(hash_token(configured_token)):
                return None
            has_admin = uow.actors.count_admins() > 0
            if has_admin and not configured_token:
                return None
            admin = uow.actors.get("admin") or uow.actors.add(
                Actor("admin", Role.ADMIN, ActorKind.PERSON), now
            )
            token = configured_token or self._secrets.token()
            uow.actors.add_token(admin, "admin", hash_token(token), token[:10], now)
        return None if configured_token else token

    def create_token(
        self, by: Actor, name: str, role: Role, kind: ActorKind | None = None,
        scopes: Iterable[str] = (),
    ) -> tuple[str, TokenRecord]:
        """A new token for the actor ``name`` (created with ``role`` if new), with
        ``scopes`` (``domain.visibility.SCOPES``) added to what the role allows."""
        require_admin(by, "creating tokens")
        granted = checked_scopes(scopes)
        if not _NAME.match(name):
            raise ValidationFailed(
                "a name is 1-100 letters, digits or _.@:+-", field="name"
            )
        now = self._clock.now()
        token = self._secrets.token()
        with self._store.write() as uow:
            actor = uow.actors.get(name)
            if actor is None:
                default_kind = ActorKind.AGENT if role is Role.AGENT else ActorKind.PERSON
                actor = uow.actors.add(Actor(name, role, kind or default_kind), now)
            elif actor.role is not role:
                raise Conflict(
                    f"{name} already exists with role {actor.role}, not {role}", field="role"
                )
            record = uow.actors.add_token(actor, name, hash_token(token), token[:10], now,
                                          granted)
        return token, record

    def authenticate(self, token: str | None, client: str | None = None) -> Actor:
        """The actor behind ``token``. Unknown tokens are throttled per ``client`` address:
        past the limit every uncached token from it gets ``Throttled`` (429)."""
        if not token:
            raise Unauthenticated("send 'Authorization: Bearer <token>'", field="Authorization")
        cached = self.cached(token)
        if cached is not None:
            return cached
        token_hash = hash_token(token)
        with self._checks_guard:
            check = self._checks.setdefault(token_hash, threading.Lock())
        try:
            with check:
                return self.cached(token) or self._check(token_hash, client)
        finally:
            with self._checks_guard:
                if self._checks.get(token_hash) is check:
                    del self._checks[token_hash]

    def _check(self, token_hash: str, client: str | None) -> Actor:
        now = self._clock.now()
        with attempt((self._throttles.token_addresses, address_key(client)),
                     field="Authorization", what="API tokens"):
            with self._store.read() as uow:
                actor = uow.actors.by_token_hash(token_hash)
            if actor is None:
                self._cache.pop(token_hash, None)
                raise Unauthenticated("the token is unknown or revoked",
                                      field="Authorization")
        if self._cache_seconds > 0:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[token_hash] = (actor, now + timedelta(seconds=self._cache_seconds))
        return actor

    def cached(self, token: str | None) -> Actor | None:
        """The actor for ``token`` if it was checked within ``cache_seconds``; no I/O, so
        callers on an event loop may use it before falling back to ``authenticate``."""
        if not token:
            return None
        entry = self._cache.get(hash_token(token))
        if entry is not None and entry[1] > self._clock.now():
            return entry[0]
        return None

    def tokens(self, by: Actor) -> list[TokenRecord]:
        require_admin(by, "listing tokens")
        with self._store.read() as uow:
            return uow.actors.tokens()

    def revoke(self, by: Actor, token_id: int) -> None:
        require_admin(by, "revoking tokens")
        with self._store.write() as uow:
            if not uow.actors.revoke_token(token_id, self._clock.now()):
                raise NotFound(f"token {token_id} does not exist or is revoked", field="id")
        self.forget_checked()
        self._revoked(str(token_id))

    def share_revocations(self, send: Callable[[str], None]) -> None:
        """Tell ``send`` (not blocking: the other processes' bus) of each revocation, so
        their :meth:`forget_checked` drops cached tokens at once."""
        self._revoked = send

    def forget_checked(self, message: str = "") -> None:
        """Check every token against the database again (another process revoked one)."""
        self._cache.clear()
