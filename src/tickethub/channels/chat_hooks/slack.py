"""Slack's Events API as a chat transport (docs/chat.md).

Inbound (``POST /hooks/slack``): the request is signed — ``X-Slack-Signature`` is
``v0=`` + HMAC-SHA256 of ``v0:{X-Slack-Request-Timestamp}:{raw body}`` with the app's
signing secret — and a timestamp more than 5 minutes from now is refused as a replay.
``message`` and ``app_mention`` events become chat messages: the thread root is
``thread_ts`` (a top-level message roots its own thread at its ``ts``), the event id is
the message's ``ts`` (so a retry, or the ``app_mention`` twin of a ``message``, is
dropped by the engine), a leading mention of the bot (``<@U0BOT>``, the app's user from
``authorizations``) reads as ``@bot``, and messages from bots (``bot_id`` or any
``subtype``: edits, joins, the bot's own posts) are ignored.

Outbound: ``chat.postMessage`` with ``thread_ts`` (a direct message goes to the user's
id as the channel), with the bot token; the reply's ``ts`` is its event id.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any

import httpx

from tickethub.channels.chat_hooks.base import Actors, WebhookTransport
from tickethub.conversations.model import ChatMessage, Reply

TRANSPORT = "slack"
MAX_AGE_SECONDS = 300
_EVENTS = ("message", "app_mention")


def signature(secret: str, timestamp: str, body: bytes) -> str:
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def verify(secret: str, timestamp: str | None, body: bytes, header: str | None,
           now: float) -> str | None:
    """``None`` when the request is signed by ``secret`` within the last 5 minutes, else
    the header at fault."""
    try:
        stamp = int(timestamp or "")
    except ValueError:
        return "X-Slack-Request-Timestamp"
    if abs(now - stamp) > MAX_AGE_SECONDS:
        return "X-Slack-Request-Timestamp"
    if not header or not hmac.compare_digest(signature(secret, str(stamp), body).encode(),
                                             header.strip().encode()):
        return "X-Slack-Signature"
    return None


def parse_event(payload: dict[str, Any], actors: Actors, bot_name: str
                ) -> ChatMessage | None:
    """The chat message in an ``event_callback``; ``None`` for anything the bot does
    not act on (other events, bots, edits). Raises ``ValueError`` naming a missing
    field."""
    event = payload.get("event")
    if not isinstance(event, dict):
        raise ValueError("event")
    if event.get("type") not in _EVENTS or event.get("bot_id") or event.get("subtype"):
        return None
    for name in ("channel", "user", "ts"):
        if not isinstance(event.get(name), str) or not event[name]:
            raise ValueError(f"event.{name}")
    text = event.get("text")
    if not isinstance(text, str):
        raise ValueError("event.text")
    for auth in payload.get("authorizations") or ():
        if isinstance(auth, dict) and auth.get("user_id"):
            text = re.sub(rf"^\s*<@{re.escape(str(auth['user_id']))}(\|[^>]*)?>",
                          f"@{bot_name}", text)
    thread_ts = event.get("thread_ts")
    root = thread_ts if isinstance(thread_ts, str) and thread_ts != event["ts"] else None
    return ChatMessage(TRANSPORT, event["channel"], event["ts"],
                       actors.hub_name(TRANSPORT, event["user"]), text, thread_root=root,
                       direct=event.get("channel_type") == "im")


class SlackTransport(WebhookTransport):
    """Replies through the Web API at ``api_url`` (``https://slack.com/api``)."""

    name = TRANSPORT

    def __init__(self, actors: Actors, http: httpx.AsyncClient, api_url: str,
                 token: str) -> None:
        super().__init__(actors)
        self._http = http
        self._url = api_url.rstrip("/") + "/chat.postMessage"
        self._token = token

    async def send(self, reply: Reply) -> str:
        body: dict[str, Any] = {"text": reply.text}
        if reply.direct_to is not None:
            body["channel"] = self.actors.platform_id(TRANSPORT, reply.direct_to)
        else:
            body["channel"] = reply.thread.room
            body["thread_ts"] = reply.thread.root
        response = await self._http.post(
            self._url, json=body, headers={"Authorization": f"Bearer {self._token}"})
        response.raise_for_status()
        data = response.json()
        if not data.get("ok"):  # Slack answers 200 with ok=false on errors
            raise RuntimeError(f"chat.postMessage failed: {data.get('error')}")
        return str(data["ts"])
