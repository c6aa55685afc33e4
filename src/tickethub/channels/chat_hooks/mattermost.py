"""Mattermost outgoing webhooks and slash commands as a chat transport (docs/chat.md).

Inbound (``POST /hooks/mattermost``, a form or JSON body): the ``token`` must equal one
of the configured tokens (compared in constant time). An outgoing webhook's post roots
the thread at its ``root_id`` (a post in a thread) or else at its own ``post_id``; its
``post_id`` is the event id, so a redelivery is dropped by the engine. A slash command
(``command`` set, no post) answers in ``root_id``'s thread when Mattermost sends one;
otherwise the hook first posts the command as a new root (``@alice: /foodselection
tomorrow``) and the conversation lives under it.

An outgoing webhook fires on the bot's own posts too (on every post of its channel when
it has no trigger words): a post by the bot's user (``GET /api/v4/users/me`` with its
token, asked once) is not a chat message.

Outbound: ``POST {url}/api/v4/posts`` with ``root_id`` and the bot's token; the created
post's id is the event id. Direct messages are not supported here: a step that insists
on one is asked in the thread, and cannot be answered there (docs/chat.md, "Not yet").
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from tickethub.channels.chat_hooks.base import Actors, WebhookTransport
from tickethub.conversations.model import ChatMessage, Reply

log = logging.getLogger(__name__)

TRANSPORT = "mattermost"
LOOKUP_TIMEOUT_SECONDS = 3.0  # asking who the bot is
LOOKUP_RETRY_SECONDS = 30  # after that failed


def token_ok(given: object, tokens: Sequence[str]) -> bool:
    """True when ``given`` is one of ``tokens``; every token is compared, in constant
    time, so the answer's timing tells nothing."""
    if not isinstance(given, str) or not given:
        return False
    found = False
    for token in tokens:
        found |= hmac.compare_digest(given.encode(), token.encode())
    return found


def _field(payload: Mapping[str, Any], name: str) -> str:
    value = payload.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(name)
    return value


def is_command(payload: Mapping[str, Any]) -> bool:
    return bool(payload.get("command"))


def parse_post(payload: Mapping[str, Any], actors: Actors, root: str | None = None,
               bot_user: str | None = None) -> ChatMessage | None:
    """The chat message in an outgoing webhook or slash command payload (``root``: the
    thread root the hook made for a top-level slash command); ``None`` for a post by
    ``bot_user``, the bot itself. Raises ``ValueError`` naming a missing field."""
    channel = _field(payload, "channel_id")
    user = _field(payload, "user_id")
    if bot_user is not None and user == bot_user:
        return None
    root_id = payload.get("root_id") or None
    if is_command(payload):
        event_id = _field(payload, "trigger_id")
        text = f"{_field(payload, 'command')} {payload.get('text', '')}".strip()
        thread_root = root_id or root
    else:
        event_id = _field(payload, "post_id")
        said = payload.get("text")
        if not isinstance(said, str):
            raise ValueError("text")
        text = said
        thread_root = root_id if root_id != event_id else None
    return ChatMessage(TRANSPORT, channel, event_id, actors.hub_name(TRANSPORT, user),
                       text, thread_root=str(thread_root) if thread_root else None)


class MattermostTransport(WebhookTransport):
    """Replies through Mattermost's REST API at ``url`` with a bot access token."""

    name = TRANSPORT

    def __init__(self, actors: Actors, http: httpx.AsyncClient, url: str,
                 token: str) -> None:
        super().__init__(actors)
        self._http = http
        self._posts = url.rstrip("/") + "/api/v4/posts"
        self._me = url.rstrip("/") + "/api/v4/users/me"
        self._token = token
        self._bot_user: str | None = None
        self._ask_after = 0.0  # monotonic time before which the bot is not asked again

    async def bot_user(self) -> str | None:
        """The bot's user id, asked of Mattermost once; ``None`` while it cannot be
        asked (then a post is taken as someone else's). A failed question is asked
        again ``LOOKUP_RETRY_SECONDS`` later at the soonest, briefly: it holds up the
        hook's answer to Mattermost."""
        if self._bot_user is None and time.monotonic() >= self._ask_after:
            try:
                response = await self._http.get(
                    self._me, headers={"Authorization": f"Bearer {self._token}"},
                    timeout=LOOKUP_TIMEOUT_SECONDS)
                response.raise_for_status()
                self._bot_user = str(response.json()["id"])
            except (httpx.HTTPError, ValueError, KeyError) as exc:
                self._ask_after = time.monotonic() + LOOKUP_RETRY_SECONDS
                log.warning("asking Mattermost who the bot is failed (%s); asking again "
                            "in %ds", exc, LOOKUP_RETRY_SECONDS)
        return self._bot_user

    async def post(self, channel: str, text: str, root: str | None = None) -> str:
        """Create a post (in ``root``'s thread); return its id."""
        body = {"channel_id": channel, "message": text, "root_id": root or ""}
        response = await self._http.post(
            self._posts, json=body, headers={"Authorization": f"Bearer {self._token}"})
        response.raise_for_status()
        return str(response.json()["id"])

    async def send(self, reply: Reply) -> str:
        # No direct send through this integration: a private reply goes to the thread.
        return await self.post(reply.thread.room, reply.text, reply.thread.root)
