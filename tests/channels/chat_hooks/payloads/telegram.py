"""Telegram Bot API updates with a text message in a forum supergroup."""

from __future__ import annotations

from typing import Any

SECRET = "telegram-secret_0123456789"
HEADERS = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
CHAT = -1001234567890
USERS = {"alice": 1111111, "bob": 2222222}
BOT = 123  # the bot token is "123:ABC"


def update(update_id: int, who: str, text: str, message_id: int, *,
           topic: int | None = None, reply_to: int | None = None,
           is_bot: bool = False) -> dict[str, Any]:
    """An update with a text message, as the Bot API sends it (``is_bot``: from the bot
    itself, whatever ``who`` says)."""
    message: dict[str, Any] = {
        "message_id": message_id,
        "from": {"id": BOT if is_bot else USERS[who], "is_bot": is_bot,
                 "first_name": who.title(), "username": who, "language_code": "en"},
        "chat": {"id": CHAT, "title": "Lunch", "type": "supergroup", "is_forum": True},
        "date": 1700000000, "text": text}
    if text.startswith("/"):
        message["entities"] = [{"offset": 0, "length": len(text.split()[0]),
                                "type": "bot_command"}]
    if topic is not None:
        message["message_thread_id"] = topic
        message["is_topic_message"] = True
        message["reply_to_message"] = {"message_id": topic, "date": 1699990000,
                                       "chat": message["chat"],
                                       "forum_topic_created": {"name": "Friday lunch",
                                                               "icon_color": 7322096}}
    if reply_to is not None:
        message["reply_to_message"] = {"message_id": reply_to, "date": 1700000000,
                                       "chat": message["chat"], "text": "?"}
    return {"update_id": update_id, "message": message}
