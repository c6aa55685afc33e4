"""``POST /hooks/github``: GitHub's webhook deliveries.

The signature (``X-Hub-Signature-256``, HMAC-SHA256 of the raw body with
``TICKETHUB_GITHUB_WEBHOOK_SECRET``) is checked in constant time before anything else; a
missing or wrong one is 401 and nothing is stored. A good delivery is stored once per
``X-GitHub-Delivery`` and answered at once — 202 when new, 200 for a replay, which has
no second effect — and processed from that durable inbox by the channel's worker.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from tickethub.api.deps import call, runtime
from tickethub.api.json_bodies import json_object
from tickethub.api.problem_docs import PROBLEM_RESPONSES
from tickethub.channels.github.signature import verify
from tickethub.errors import MalformedJSON, Unauthenticated, Unavailable, ValidationFailed
from tickethub.services.doors import HooksDoor

router = APIRouter(tags=["github"], responses=PROBLEM_RESPONSES)


@router.post("/hooks/github", summary="Receive a GitHub webhook delivery",
             status_code=202, responses={200: {"description": "A replay; nothing done"},
                                         401: {"description": "Bad or missing signature"}})
async def github_webhook(request: Request, hub: HooksDoor = Depends(runtime)) -> Any:
    body = await request.body()
    secret = hub.settings.github_webhook_secret
    if secret is None or not verify(secret.get_secret_value(), body,
                                    request.headers.get("x-hub-signature-256")):
        raise Unauthenticated("X-Hub-Signature-256 is missing or does not match the body "
                              "signed with the webhook secret", field="X-Hub-Signature-256")
    channel = hub.github
    if channel is None:
        raise Unavailable("the GitHub channel is off: set TICKETHUB_GITHUB_TOKEN")
    event = request.headers.get("x-github-event", "")
    delivery = request.headers.get("x-github-delivery", "")
    if not event:
        raise ValidationFailed("X-GitHub-Event is missing", field="X-GitHub-Event")
    if not delivery:
        raise ValidationFailed("X-GitHub-Delivery is missing", field="X-GitHub-Delivery")
    payload = _payload(body, request.headers.get("content-type", ""))
    item = await call(channel.sync.receive, delivery, event, payload)
    if item is not None:
        channel.intake.submit(item)
    return JSONResponse({"delivery": delivery, "event": event, "duplicate": item is None},
                        status_code=202 if item is not None else 200)


def _payload(body: bytes, content_type: str) -> str:
    """The JSON payload as text; GitHub sends it raw or as a ``payload=`` form field."""
    not_json = "the body is not a JSON webhook payload"
    try:
        text = body.decode()
    except UnicodeDecodeError:
        raise MalformedJSON(not_json, field="body") from None
    if content_type.startswith("application/x-www-form-urlencoded"):
        text = parse_qs(text).get("payload", [""])[0]
    json_object(text, not_json=not_json)
    return text
