"""The webhook channel: POST each event, HMAC-signed, to URLs that admins registered.

Receivers check ``X-Tickethub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>``
with the webhook's secret and drop repeats by ``X-Tickethub-Delivery``. :data:`component`
is the channel as a hub component, always on (with no webhook registered it reads no
events).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence

import httpx

from tickethub.channels.base import Channel, DeliveryFailed
from tickethub.domain.events import Event
from tickethub.services.host import Component, Host
from tickethub.services.ports import Delivery, Webhook
from tickethub.services.webhooks import WebhookService


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def event_payload(event: Event) -> dict[str, object]:
    return {
        "seq": event.seq,
        "type": event.type.value,
        "ticket_id": event.ticket_id,
        "actor": event.actor,
        "data": event.data,
        "at": event.at.isoformat(),
    }


class WebhookChannel(Channel):
    name = "webhook"

    def __init__(self, webhooks: WebhookService, client: httpx.AsyncClient) -> None:
        self._webhooks = webhooks
        self._client = client
        self._active: dict[str, Webhook] = {}

    def refresh(self) -> None:
        # Every delivery round refreshes; under load that is many a second, so a list up
        # to a second old does (changes made in this process show at once).
        self._active = {str(w.id): w for w in self._webhooks.active(max_age_seconds=1.0)}

    @property
    def idle(self) -> bool:
        # A webhook gets only events from after its creation, so while there is none
        # the events in between need no look.
        return not self._active

    def targets(self, event: Event) -> Sequence[str]:
        return [
            key for key, hook in self._active.items()
            if hook.created_at <= event.at
            and (not hook.event_types or event.type.value in hook.event_types)
        ]

    async def deliver(self, delivery: Delivery, event: Event) -> None:
        hook = self._active.get(delivery.target)
        if hook is None:
            return  # removed since: nothing to deliver to, and nothing to retry
        body = json.dumps({"delivery": delivery.idempotency_key,
                           "event": event_payload(event)}).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "tickethub-webhook",
            "X-Tickethub-Event": event.type.value,
            "X-Tickethub-Delivery": delivery.idempotency_key,
            "Idempotency-Key": delivery.idempotency_key,
            "X-Tickethub-Signature-256": sign(hook.secret, body),
        }
        try:
            response = await self._client.post(hook.url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            raise DeliveryFailed(f"{type(exc).__name__}: {exc}") from exc
        if response.is_success:
            return
        retry_after = response.headers.get("retry-after")
        raise DeliveryFailed(
            f"HTTP {response.status_code}",
            retry_after=float(retry_after) if retry_after and retry_after.isdigit() else None,
        )


def install(host: Host) -> WebhookChannel:
    """Deliver to the webhooks admins register (``host.webhooks``, shared with the
    admin door, so a webhook registered in this process is delivered to at once)."""
    channel = WebhookChannel(host.webhooks, host.http)
    host.add_channel(channel)
    return channel


component = Component("webhooks", lambda settings: True, install)
