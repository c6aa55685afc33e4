"""Registering outbound webhooks (the webhook channel's targets)."""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlsplit

from tickethub.domain.actors import Actor, require_admin
from tickethub.domain.events import EventType
from tickethub.errors import NotFound, ValidationFailed
from tickethub.services.ports import Clock, SecretGenerator, Store, Webhook


class WebhookService:
    def __init__(self, store: Store, clock: Clock, secrets: SecretGenerator) -> None:
        self._store = store
        self._clock = clock
        self._secrets = secrets
        self._read: tuple[list[Webhook], datetime] | None = None  # the last active()

    def register(self, by: Actor, url: str, event_types: list[str],
                 secret: str | None = None) -> Webhook:
        require_admin(by, "registering webhooks")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValidationFailed("url must be an http(s) URL", field="url")
        known = {t.value for t in EventType}
        unknown = sorted(set(event_types) - known)
        if unknown:
            raise ValidationFailed(
                f"unknown event types {unknown}; known: {sorted(known)}", field="events"
            )
        if secret is not None and len(secret) < 16:
            raise ValidationFailed("a secret needs at least 16 characters", field="secret")
        with self._store.write() as uow:
            hook = uow.webhooks.add(url, secret or self._secrets.token(), tuple(event_types),
                                    by.name, self._clock.now())
        self._read = None  # after the commit, so no read in between can keep the old list
        return hook

    def active(self, max_age_seconds: float = 0.0) -> list[Webhook]:
        """The registered webhooks. A list read at most ``max_age_seconds`` ago will do
        (registering or removing one here starts afresh; another hub process's change
        shows within that age)."""
        now = self._clock.now()
        read = self._read
        if read is not None and (now - read[1]).total_seconds() <= max_age_seconds:
            return read[0]
        with self._store.read() as uow:
            hooks = uow.webhooks.list()
        self._read = (hooks, now)
        return hooks

    def remove(self, by: Actor, webhook_id: int) -> None:
        require_admin(by, "removing webhooks")
        with self._store.write() as uow:
            if not uow.webhooks.delete(webhook_id):
                raise NotFound(f"webhook {webhook_id} does not exist", field="id")
        self._read = None
