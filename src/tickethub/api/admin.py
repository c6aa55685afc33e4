"""Tokens, webhooks, deliveries and ``/me``: who you are and what admins manage."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response

from tickethub.api.deps import admin_actor, call, current_actor, runtime
from tickethub.api.problem_docs import PROBLEM_RESPONSES
from tickethub.api.schemas import ActorOut, TokenIn, TokenOut, WebhookIn, WebhookOut
from tickethub.api.wire_types import Id
from tickethub.domain.actors import Actor, Role
from tickethub.services.doors import AdminDoor

router = APIRouter(prefix="/api/v1", tags=["admin"], responses=PROBLEM_RESPONSES)

Hub = Annotated[AdminDoor, Depends(runtime)]
Me = Annotated[Actor, Depends(current_actor)]
Admin = Annotated[Actor, Depends(admin_actor)]


@router.get("/me", response_model=ActorOut, summary="The actor behind your token")
async def me(actor: Me) -> ActorOut:
    return ActorOut(name=actor.name, role=actor.role.value, kind=actor.kind.value)


@router.post("/tokens", status_code=201, response_model=TokenOut, summary="Create a token")
async def create_token(body: TokenIn, hub: Hub, admin: Admin) -> TokenOut:
    """A new token for the actor ``name`` (created with ``role`` if new). The token is in
    this response only; the hub stores a hash."""
    token, record = await call(hub.auth.create_token, admin, body.name, Role(body.role),
                               scopes=body.scopes)
    return TokenOut(id=record.id, name=record.name, role=record.actor.role.value,
                    prefix=record.prefix, created_at=record.created_at,
                    scopes=sorted(record.scopes), token=token)


@router.get("/tokens", response_model=list[TokenOut], summary="List tokens (no secrets)")
async def list_tokens(hub: Hub, admin: Admin) -> list[TokenOut]:
    records = await call(hub.auth.tokens, admin)
    return [TokenOut(id=r.id, name=r.name, role=r.actor.role.value, prefix=r.prefix,
                     created_at=r.created_at, revoked_at=r.revoked_at,
                     scopes=sorted(r.scopes)) for r in records]


@router.delete("/tokens/{token_id}", status_code=204, summary="Revoke a token")
async def revoke_token(token_id: Id, hub: Hub, admin: Admin) -> Response:
    await call(hub.auth.revoke, admin, token_id)
    return Response(status_code=204)


@router.post("/webhooks", status_code=201, response_model=WebhookOut,
             summary="Register a webhook")
async def create_webhook(body: WebhookIn, hub: Hub, admin: Admin) -> WebhookOut:
    """Every event (or those in ``events``) is POSTed to ``url``, signed with
    ``X-Tickethub-Signature-256: sha256=<HMAC of the body with the secret>``."""
    hook = await call(hub.webhooks.register, admin, body.url, body.events, body.secret)
    return WebhookOut(id=hook.id, url=hook.url, events=list(hook.event_types),
                      created_at=hook.created_at, secret=hook.secret)


@router.get("/webhooks", response_model=list[WebhookOut], summary="List webhooks")
async def list_webhooks(hub: Hub, admin: Admin) -> list[WebhookOut]:
    return [WebhookOut(id=h.id, url=h.url, events=list(h.event_types), created_at=h.created_at)
            for h in await call(hub.webhooks.active)]


@router.delete("/webhooks/{webhook_id}", status_code=204, summary="Remove a webhook")
async def delete_webhook(webhook_id: Id, hub: Hub, admin: Admin) -> Response:
    await call(hub.webhooks.remove, admin, webhook_id)
    return Response(status_code=204)


@router.get("/deliveries", summary="Outbound deliveries and their state")
async def list_deliveries(
    hub: Hub, admin: Admin, channel: str | None = None,
    status: Annotated[str | None, Query(pattern="^(pending|delivered|dead)$")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> list[dict[str, object]]:
    return [
        {"id": d.id, "channel": d.channel, "target": d.target, "event_seq": d.event_seq,
         "idempotency_key": d.idempotency_key, "status": d.status, "attempts": d.attempts,
         "next_attempt_at": d.next_attempt_at.isoformat(), "last_error": d.last_error}
        for d in await call(hub.deliveries.list, channel, status, limit)
    ]
