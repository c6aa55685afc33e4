"""Slack Events API requests: an ``event_callback`` with a ``message`` event, and the
signature headers."""

from __future__ import annotations

import time
from itertools import count
from typing import Any

from tickethub.channels.chat_hooks.slack import signature

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CHANNEL = "C0LUNCH0001"
BOT_USER = "U0BOT00001"
ALICE = "U0ALICE001"
BOB = "U0BOB00001"
_event_ids = count(1)


def event(user: str, text: str, ts: str, thread_ts: str | None = None,
          **extra: Any) -> dict[str, Any]:
    """An ``event_callback`` wrapping a ``message`` event, as Slack sends it."""
    inner: dict[str, Any] = {
        "type": "message", "channel": CHANNEL, "user": user, "text": text, "ts": ts,
        "event_ts": ts, "channel_type": "channel", "team": "T0TEAM0001",
        "blocks": [{"type": "rich_text", "block_id": "b1", "elements": []}], **extra}
    if thread_ts is not None:
        inner["thread_ts"] = thread_ts
        inner["parent_user_id"] = ALICE
    return {
        "token": "XXYYZZ", "team_id": "T0TEAM0001", "api_app_id": "A0APP00001",
        "event": inner, "type": "event_callback",
        "event_id": f"Ev0{next(_event_ids):08d}", "event_time": int(time.time()),
        "authorizations": [{"enterprise_id": None, "team_id": "T0TEAM0001",
                            "user_id": BOT_USER, "is_bot": True,
                            "is_enterprise_install": False}],
        "is_ext_shared_channel": False, "event_context": "4-eyJldCI6Im1lc3NhZ2UifQ",
    }


def signed(body: bytes, *, at: int | None = None, secret: str = SECRET
           ) -> dict[str, str]:
    """The headers of a request Slack signed with ``secret`` at ``at`` (now)."""
    stamp = str(at if at is not None else int(time.time()))
    return {"X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": signature(secret, stamp, body),
            "Content-Type": "application/json"}
