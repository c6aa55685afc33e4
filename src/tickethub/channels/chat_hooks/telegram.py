"""Telegram Bot API webhook updates as a chat transport (docs/chat.md).

Inbound (``POST /hooks/telegram``): ``X-Telegram-Bot-Api-Secret-Token`` must equal the
secret given to ``setWebhook`` (constant-time compare). An update's ``message`` becomes
a chat message whose event id is the ``update_id`` (Telegram redelivers an update until
it is acknowledged; the engine drops the repeat). ``message_thread_id`` is a thread key
only when ``is_topic_message`` is true — in a forum topic; elsewhere Telegram also sets
it for plain replies, so there the whole chat is the thread. ``/command@BotName`` reads
as ``/command``; messages from bots are ignored; a private chat is direct.

Outbound: ``sendMessage`` with ``message_thread_id`` for a topic; the sent message is
``chat:message_id``, which a reply's ``reply_to_message`` names, so a reply to the bot's
question routes to its conversation.
"""

from __future__ import annotations

import hmac
import re
from typing import Any

import httpx

from tickethub.channels.chat_hooks.base import Actors, WebhookTransport
from tickethub.conversations.model import ChatMessage, Reply

TRANSPORT = "telegram"
WHOLE_CHAT = "chat"  # the thread root of a chat without topics


def secret_ok(given: str | None, secret: str) -> bool:
    return bool(given) and hmac.compare_digest(str(given).encode(), secret.encode())


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(name)
    return value


def parse_update(update: dict[str, Any], actors: Actors) -> ChatMessage | None:
    """The chat message in an update; ``None`` for updates without a text message and
    for bots. Raises ``ValueError`` naming a missing or mistyped field."""
    update_id = _int(update.get("update_id"), "update_id")
    message = update.get("message")
    if message is None:
        return None  # edited_message, callback_query, ...: not acted on
    if not isinstance(message, dict):
        raise ValueError("message")
    chat = message.get("chat")
    sender = message.get("from")
    if not isinstance(chat, dict):
        raise ValueError("message.chat")
    chat_id = _int(chat.get("id"), "message.chat.id")
    if not isinstance(sender, dict):
        raise ValueError("message.from")
    user = _int(sender.get("id"), "message.from.id")
    text = message.get("text")
    if sender.get("is_bot") or not isinstance(text, str):
        return None
    text = re.sub(r"^(/\w+)@\w+", r"\1", text)
    topic = message.get("message_thread_id") if message.get("is_topic_message") is True else None
    root = str(_int(topic, "message.message_thread_id")) if topic is not None else WHOLE_CHAT
    quoted = message.get("reply_to_message")
    reply_to = None
    if isinstance(quoted, dict) and isinstance(quoted.get("message_id"), int) \
            and quoted["message_id"] != topic:  # in a topic, the topic's start is implied
        reply_to = f"{chat_id}:{quoted['message_id']}"
    return ChatMessage(TRANSPORT, str(chat_id), f"update:{update_id}",
                       actors.hub_name(TRANSPORT, str(user)), text, thread_root=root,
                       reply_to=reply_to, direct=chat.get("type") == "private")


class TelegramTransport(WebhookTransport):
    """Replies through the Bot API at ``api_url`` (``https://api.telegram.org``)."""

    name = TRANSPORT

    def __init__(self, actors: Actors, http: httpx.AsyncClient, api_url: str,
                 token: str) -> None:
        super().__init__(actors)
        self._http = http
        self._url = f"{api_url.rstrip('/')}/bot{token}/sendMessage"

    async def send(self, reply: Reply) -> str:
        body: dict[str, Any] = {"text": reply.text}
        if reply.direct_to is not None:
            body["chat_id"] = int(self.actors.platform_id(TRANSPORT, reply.direct_to))
        else:
            body["chat_id"] = int(reply.thread.room)
            if reply.thread.root != WHOLE_CHAT:
                body["message_thread_id"] = int(reply.thread.root)
        response = await self._http.post(self._url, json=body)
        response.raise_for_status()
        data = response.json()
        if not data.get("ok"):
            raise RuntimeError(f"sendMessage failed: {data.get('description')}")
        sent = data["result"]
        return f"{sent['chat']['id']}:{sent['message_id']}"
