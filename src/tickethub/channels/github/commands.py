"""Slash commands in GitHub comments.

A comment whose first non-empty line is ``/<word> [argument]`` is a command; the argument
runs to the end of the comment. ``parse`` returns ``None`` for plain comments (a line like
``/usr/bin is broken`` is not a command), a :class:`Command` for a known one and an
:class:`UnknownCommand` otherwise. ``HELP`` is the reply that lists the valid ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

COMMANDS: dict[str, str] = {
    "answer": "`/answer <text>` answers the ticket (JSON text counts as structured data)",
    "approve": "`/approve [comment]` approves an approval",
    "deny": "`/deny <reason>` denies an approval",
    "done": "`/done` closes the ticket as done",
    "cancel": "`/cancel` cancels the ticket",
    "defer": "`/defer <duration>` defers it, e.g. `/defer 2h`, `/defer 3d`, "
             "`/defer 2026-12-01T09:00Z`",
    "reopen": "`/reopen` reopens a resolved ticket",
    "assign": "`/assign @login` assigns it (`/assign` alone unassigns)",
}
NEEDS_ARGUMENT = frozenset({"answer", "defer"})

HELP = "Valid commands:\n" + "\n".join(f"- {text}" for text in COMMANDS.values())

_COMMAND = re.compile(r"^/([A-Za-z][A-Za-z0-9_-]*)(?:[ \t]+(.*))?$", re.DOTALL)
_NEWLINE_ARG = re.compile(r"^/([A-Za-z][A-Za-z0-9_-]*)\r?\n(.*)$", re.DOTALL)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PART = re.compile(r"(\d+)\s*(s|m|h|d|w)")


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    argument: str


@dataclass(frozen=True, slots=True)
class UnknownCommand:
    name: str


def parse(body: str) -> Command | UnknownCommand | None:
    text = body.strip()
    match = _COMMAND.match(text) or _NEWLINE_ARG.match(text)
    if match is None:
        return None
    name = match.group(1).lower()
    argument = (match.group(2) or "").strip()
    if name not in COMMANDS:
        return UnknownCommand(name)
    return Command(name, argument)


def defer_until(argument: str, now: datetime) -> datetime:
    """When ``/defer <argument>`` ends: a duration like ``90m``, ``1h30m``, ``2d`` or an
    ISO 8601 time. Raises ``ValueError`` with a message fit to show the commenter."""
    text = argument.strip().lower().replace(" ", "")
    if text and _PART.sub("", text) == "":
        seconds = sum(int(n) * _UNITS[u] for n, u in _PART.findall(text))
        if seconds > 0:
            return now + timedelta(seconds=seconds)
    try:
        when = datetime.fromisoformat(argument.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"cannot read {argument!r} as a duration (like 2h or 3d) or an "
                         "ISO 8601 time") from None
    return when if when.tzinfo else when.replace(tzinfo=now.tzinfo)
