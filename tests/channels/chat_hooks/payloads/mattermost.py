"""Mattermost outgoing webhook and slash command request bodies."""

from __future__ import annotations

from typing import Any

TOKEN = "xr3j5x3p4pfk7dkpwr3ftjpctr"
CHANNEL = "fukxanjgjbnp7ng383at53k1sy"
USERS = {"alice": "alice0id", "bob": "bob00id"}


def outgoing(who: str, text: str, post_id: str, root_id: str = "", *,
             user_id: str | None = None) -> dict[str, Any]:
    """An outgoing webhook request body, as Mattermost documents it (``user_id``: a
    user other than alice and bob)."""
    return {"token": TOKEN, "team_id": "qnmmtbn6bfgsmxpbjx3fqy8rxe",
            "team_domain": "lunch", "channel_id": CHANNEL, "channel_name": "town-square",
            "timestamp": "1700000000000", "user_id": user_id or USERS[who],
            "user_name": who, "post_id": post_id, "root_id": root_id, "text": text,
            "trigger_word": "@bot", "file_ids": ""}


def slash(who: str, command: str, text: str, root_id: str = "") -> dict[str, Any]:
    """A slash command request body."""
    body = {"channel_id": CHANNEL, "channel_name": "town-square", "command": command,
            "response_url": "https://mm.example.com/hooks/commands/abc",
            "team_domain": "lunch", "team_id": "qnmmtbn6bfgsmxpbjx3fqy8rxe", "text": text,
            "token": TOKEN, "trigger_id": f"trig-{who}-{command}-{text}",
            "user_id": USERS[who], "user_name": who}
    if root_id:
        body["root_id"] = root_id
    return body
