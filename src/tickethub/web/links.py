"""Outside links from a ticket's ``refs``: where else this ticket lives.

Known names get a readable label and a URL: ``github`` (``owner/repo#12``), ``github_url``,
``email_message_id`` / ``message_id`` (shown, not linked: there is no URL for a mail),
``ap_task`` (Agent Protocol task id, linked to the hub's ``/ap/v1`` door). Any other value
that is an http(s) URL becomes a link; the rest is shown as text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_GITHUB = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+)#(?P<number>\d+)$")
_LABELS = {"github": "GitHub issue", "github_url": "GitHub", "email_message_id": "Email",
           "message_id": "Email", "ap_task": "Agent Protocol task", "chat": "Chat thread",
           "openai_conversation": "OpenAI conversation"}


@dataclass(frozen=True, slots=True)
class OutsideLink:
    label: str
    text: str
    url: str | None


def _one(name: str, value: Any) -> OutsideLink:
    label = _LABELS.get(name, name.replace("_", " ").capitalize())
    text = str(value)
    if text.startswith(("https://", "http://")):
        return OutsideLink(label, text, text)
    found = _GITHUB.match(text) if name.startswith("github") else None
    if found:
        url = f"https://github.com/{found['repo']}/issues/{found['number']}"
        return OutsideLink(label, text, url)
    if name == "ap_task":
        return OutsideLink(label, text, f"/ap/v1/agent/tasks/{text}")
    return OutsideLink(label, text, None)


def outside_links(refs: dict[str, Any]) -> list[OutsideLink]:
    links = []
    for name, value in sorted(refs.items()):
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str | int) and not isinstance(item, bool):
                links.append(_one(name, item))
    return links
