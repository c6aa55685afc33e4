"""``POST /hooks/agents/{owner}``: a person's own systems send events to their agents.

The body is JSON ``{"event": "deploy.finished", "text": "...", "ticket_id": 12}``
(``ticket_id`` optional: without it the hub opens an info ticket for the owner as the
event's thread). It must be signed like GitHub's deliveries — ``X-Hub-Signature-256``,
HMAC-SHA256 of the raw body — with the owner's sealed agent secret ``webhook-secret``
(``tickethub agent secret OWNER webhook-secret``). Whoever holds that secret speaks as
the owner, so the event's author is the owner's webhook identity (``identities.webhook``,
default their hub name) and only the owner's installations see it. 202 with the runs
started; a bad or missing signature is 401 and nothing happens. A signed body that is not
a JSON object is a 400 ``malformed_json`` naming ``body`` (``api.json_bodies``, as on the
other webhook doors).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from tickethub.api.deps import call, runtime
from tickethub.api.json_bodies import json_object
from tickethub.api.problem_docs import PROBLEM_RESPONSES
from tickethub.channels.github.signature import verify
from tickethub.domain.actors import Actor, Role
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.errors import NotFound, Unauthenticated, Unavailable, ValidationFailed
from tickethub.services.doors import HooksDoor

router = APIRouter(tags=["agents"], responses=PROBLEM_RESPONSES)
SECRET_NAME = "webhook-secret"


@router.post("/hooks/agents/{owner}", summary="Send an event to a person's agents",
             status_code=202, responses={401: {"description": "Bad or missing signature"}})
async def agents_webhook(owner: str, request: Request,
                         hub: HooksDoor = Depends(runtime)) -> Any:
    agents = hub.agents
    if agents is None:
        raise Unavailable("personal agents are off (TICKETHUB_AGENTS_ENABLED)")
    body = await request.body()
    try:
        secret = await call(agents.directory.secret, owner, SECRET_NAME)
    except NotFound:
        secret = None
    if secret is None or not verify(secret, body, request.headers.get("x-hub-signature-256")):
        raise Unauthenticated("X-Hub-Signature-256 is missing or does not match the body "
                              "signed with the owner's webhook-secret",
                              field="X-Hub-Signature-256")
    data = json_object(body)  # 400 naming ``body``, as every webhook door
    event = data.get("event")
    if not isinstance(event, str) or not event.strip():
        raise ValidationFailed("'event' names the event, e.g. deploy.finished",
                               field="event")
    text = data.get("text", "")
    if not isinstance(text, str):
        raise ValidationFailed("'text' must be a string", field="text")
    ticket_id = data.get("ticket_id")
    if ticket_id is None:
        draft = TicketDraft(kind=Kind.INFO, title=f"webhook: {event}"[:200],
                            body=text, assignee=owner, labels=("agent-webhook",))
        ticket, _ = await call(hub.tickets.ask, Actor(f"webhook:{owner}", Role.AGENT), draft)
        ticket_id = ticket.id
    elif not isinstance(ticket_id, int):
        raise ValidationFailed("'ticket_id' must be an integer", field="ticket_id")
    else:
        await call(hub.tickets.get, ticket_id)  # 404 naming it when it does not exist
    installs = await call(agents.directory.installations, owner)
    author = next((i.identities.get("webhook") for i in installs
                   if i.identities.get("webhook")), owner)
    tasks = await agents.kernel.event_in("webhook", event, author, text, ticket_id,
                                         payload=data, owner=owner)
    return JSONResponse({"event": event, "ticket_id": ticket_id, "runs": len(tasks)},
                        status_code=202)
