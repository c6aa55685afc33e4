"""``POST /hooks/slack``, ``/hooks/mattermost``, ``/hooks/telegram``: webhook chat
transports (``channels/chat_hooks``, docs/chat.md).

Each hook checks the platform's signature or token first (401, nothing queued), parses
the payload (400/422 naming the field), stores the message in its thread's queue and
then answers — the engine handles it in the background (in the leading process) and
drops platform retries by event id; a database away is 503 with ``Retry-After``, and
the platform sends the message again. A hook whose transport is not configured is 404.
Bodies over ``max_body_bytes`` are refused (413) by the app's body limit before they get
here.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from tickethub.api.deps import runtime
from tickethub.api.json_bodies import json_object
from tickethub.api.problem_docs import PROBLEM_RESPONSES
from tickethub.channels.chat_hooks import WebhookTransport, mattermost, slack, telegram
from tickethub.conversations.loading import bot_names
from tickethub.errors import (
    BadRequest,
    NotFound,
    Unauthenticated,
    ValidationFailed,
)
from tickethub.services.doors import HooksDoor

router = APIRouter(tags=["chat"], responses=PROBLEM_RESPONSES)


def _transport(hub: HooksDoor, name: str, setting: str) -> WebhookTransport:
    transport = hub.chat_hooks.get(name)
    if transport is None:
        raise NotFound(f"the {name} chat transport is off: set TICKETHUB_{setting}",
                       field=setting.lower())
    return transport  # type: ignore[no-any-return]


@router.post("/hooks/slack", summary="Receive a Slack Events API request",
             responses={401: {"description": "Bad signature or stale timestamp"}})
async def slack_events(request: Request, hub: HooksDoor = Depends(runtime)) -> Any:
    transport = _transport(hub, slack.TRANSPORT, "SLACK_SIGNING_SECRET")
    secret = hub.settings.slack_signing_secret
    assert secret is not None
    body = await request.body()
    bad = slack.verify(secret.get_secret_value(),
                       request.headers.get("x-slack-request-timestamp"), body,
                       request.headers.get("x-slack-signature"),
                       hub.clock.now().timestamp())
    if bad is not None:
        raise Unauthenticated(f"{bad} does not match a request signed with the signing "
                              "secret in the last 5 minutes", field=bad)
    payload = json_object(body)
    kind = payload.get("type")
    if kind == "url_verification":
        challenge = payload.get("challenge")
        if not isinstance(challenge, str):
            raise ValidationFailed("challenge must be a string", field="challenge")
        return {"challenge": challenge}
    if kind != "event_callback":
        return JSONResponse({"ignored": kind}, status_code=200)
    try:
        msg = slack.parse_event(payload, transport.actors,
                                bot_names(hub.settings.matrix_user)[1])
    except ValueError as exc:
        raise ValidationFailed(f"{exc} is missing or not a string", field=str(exc)) from None
    if msg is not None:
        await transport.accept(msg)
    return {"queued": msg is not None, "event_id": payload.get("event_id")}


@router.post("/hooks/mattermost",
             summary="Receive a Mattermost outgoing webhook or slash command",
             responses={401: {"description": "Unknown token"}})
async def mattermost_hook(request: Request, hub: HooksDoor = Depends(runtime)) -> Any:
    transport = _transport(hub, mattermost.TRANSPORT, "MATTERMOST_TOKENS")
    assert isinstance(transport, mattermost.MattermostTransport)
    body = await request.body()
    if request.headers.get("content-type", "").startswith("application/json"):
        payload = json_object(body)
    else:  # application/x-www-form-urlencoded, as Mattermost sends by default
        try:
            payload = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        except UnicodeDecodeError:
            raise BadRequest("the form body is not UTF-8", field="body") from None
    tokens = [t.get_secret_value() for t in hub.settings.mattermost_tokens]
    if not mattermost.token_ok(payload.get("token"), tokens):
        raise Unauthenticated("token is missing or not one of the configured Mattermost "
                              "tokens", field="token")
    root = None
    try:
        if mattermost.is_command(payload) and not payload.get("root_id"):
            mattermost.parse_post(payload, transport.actors)  # validate before posting
            root = await transport.post(
                str(payload["channel_id"]),
                f"@{payload.get('user_name') or payload['user_id']}: "
                f"{payload['command']} {payload.get('text', '')}".strip())
        bot = None if mattermost.is_command(payload) else await transport.bot_user()
        msg = mattermost.parse_post(payload, transport.actors, root, bot)
    except ValueError as exc:
        raise ValidationFailed(f"{exc} is missing or not a string", field=str(exc)) from None
    if msg is not None:
        await transport.accept(msg)
    return {}  # nothing posted from here: the replies go through the API


@router.post("/hooks/telegram", summary="Receive a Telegram Bot API update",
             responses={401: {"description": "Bad secret token"}})
async def telegram_hook(request: Request, hub: HooksDoor = Depends(runtime)) -> Any:
    transport = _transport(hub, telegram.TRANSPORT, "TELEGRAM_WEBHOOK_SECRET")
    secret = hub.settings.telegram_webhook_secret
    assert secret is not None
    if not telegram.secret_ok(request.headers.get("x-telegram-bot-api-secret-token"),
                              secret.get_secret_value()):
        raise Unauthenticated("X-Telegram-Bot-Api-Secret-Token does not match the "
                              "webhook secret", field="X-Telegram-Bot-Api-Secret-Token")
    payload = json_object(await request.body())
    try:
        msg = telegram.parse_update(payload, transport.actors)
    except ValueError as exc:
        raise ValidationFailed(f"{exc} is missing or of the wrong type",
                               field=str(exc)) from None
    if msg is not None:
        await transport.accept(msg)
    return {"queued": msg is not None}
