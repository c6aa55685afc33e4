"""``request_assistance``: the agent command from ai-ticket issue 12.

An agent (Auto-GPT style) that needs a person answers with the command
``request_assistance(ticket_url, next_action)``. This function checks the command and
returns the agent's JSON response, so a runner can hand it straight back to the agent.

Success — the ``Response`` shape those agents speak::

    {"thoughts": {"text": str, "reasoning": str, "plan": str, "criticism": str,
                  "speak": str},
     "command": {"name": "request_assistance",
                 "args": {"ticket_url": str, "next_action": str}}}

Bad input — no ``thoughts``, an ``error`` naming the argument at fault, and the command
echoed as received::

    {"error": {"code": "invalid_ticket_url" | "unknown_next_action",
               "field": "ticket_url" | "next_action", "message": str},
     "command": {"name": "request_assistance",
                 "args": {"ticket_url": <as given>, "next_action": <as given>}}}

A ticket URL is one of ours (``<hub>/api/v1/tickets/<id>`` or ``<hub>/t/<id>``), a GitHub
issue (``https://github.com/<owner>/<repo>/issues/<n>``, optionally with
``#issuecomment-<id>``), or its REST form (``https://api.github.com/repos/<owner>/<repo>/
issues/<n>`` or ``.../issues/comments/<id>``). Known actions are in :data:`NEXT_ACTIONS`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

COMMAND = "request_assistance"

#: The actions an agent may announce, and what each means.
NEXT_ACTIONS: dict[str, str] = {
    "poll_url": "poll the ticket URL until a person answers",
    "wait": "block on the ticket until it is resolved (tickethub long-poll)",
    "none": "go on without waiting; the answer will be read later",
}

_NAME = r"[A-Za-z0-9_.-]+"
_PATTERNS: list[tuple[str, str, re.Pattern[str]]] = [
    # (kind, hosts, path pattern); hosts "*" means any host (our hub may live anywhere)
    ("tickethub", "*", re.compile(r"^(?P<base>(?:/[^/]+)*?)/api/v1/tickets/(?P<id>\d+)/?$")),
    ("tickethub", "*", re.compile(r"^(?P<base>(?:/[^/]+)*?)/t/(?P<id>\d+)/?$")),
    ("github_issue", "github.com",
     re.compile(rf"^/(?P<owner>{_NAME})/(?P<repo>{_NAME})/(?:issues|pull)/(?P<id>\d+)/?$")),
    ("github_issue", "api.github.com",
     re.compile(rf"^/repos/(?P<owner>{_NAME})/(?P<repo>{_NAME})/issues/(?P<id>\d+)/?$")),
    ("github_comment", "api.github.com",
     re.compile(rf"^/repos/(?P<owner>{_NAME})/(?P<repo>{_NAME})/issues/comments/"
                rf"(?P<id>\d+)/?$")),
]


@dataclass(frozen=True)
class TicketLink:
    """What a ticket URL points at. ``kind`` is ``tickethub``, ``github_issue`` or
    ``github_comment``; ``owner``/``repo`` are set for GitHub; ``poll_url`` is the URL an
    agent should poll (for our tickets, the long-poll ``.../wait`` endpoint)."""

    kind: str
    id: int
    url: str
    poll_url: str
    owner: str | None = None
    repo: str | None = None


class InvalidTicketURL(ValueError):
    """The URL does not point at a ticket; the message says why."""


def parse_ticket_url(url: Any) -> TicketLink:
    """The :class:`TicketLink` for ``url``, or :class:`InvalidTicketURL`."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidTicketURL("ticket_url must be a non-empty string")
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidTicketURL(f"{url!r} is not an http(s) URL")
    host = parts.hostname.lower()
    for kind, hosts, pattern in _PATTERNS:
        if hosts != "*" and host != hosts:
            continue
        if hosts == "*" and host in ("github.com", "api.github.com"):
            continue
        match = pattern.match(parts.path)
        if match is None:
            continue
        return _link(kind, match, parts, url)
    raise InvalidTicketURL(
        f"{url!r} is not a ticket URL: expected <hub>/api/v1/tickets/<id>, <hub>/t/<id>, "
        "https://github.com/<owner>/<repo>/issues/<n> or "
        "https://api.github.com/repos/<owner>/<repo>/issues/[comments/]<n>")


def _link(kind: str, match: re.Match[str], parts: Any, url: str) -> TicketLink:
    found = match.groupdict()
    number = int(found["id"])
    if kind == "tickethub":
        api = f"{parts.scheme}://{parts.netloc}{found['base']}/api/v1/tickets/{number}"
        return TicketLink(kind, number, url, poll_url=f"{api}/wait")
    comment = re.fullmatch(r"issuecomment-(\d+)", parts.fragment or "")
    if kind == "github_issue" and comment:
        kind, number = "github_comment", int(comment.group(1))
    return TicketLink(kind, number, url, poll_url=url, owner=found["owner"],
                      repo=found["repo"])


def _echo(ticket_url: Any, next_action: Any) -> dict[str, Any]:
    return {"name": COMMAND, "args": {"ticket_url": ticket_url, "next_action": next_action}}


def _error(code: str, field: str, message: str, ticket_url: Any, next_action: Any
           ) -> dict[str, Any]:
    return {"error": {"code": code, "field": field, "message": message},
            "command": _echo(ticket_url, next_action)}


def request_assistance(ticket_url: Any, next_action: Any = "poll_url") -> dict[str, Any]:
    """Check a ``request_assistance`` command and return the agent's response (see the
    module docstring for both shapes). Never raises for bad input: the error is data an
    agent can read and correct."""
    try:
        link = parse_ticket_url(ticket_url)
    except InvalidTicketURL as exc:
        return _error("invalid_ticket_url", "ticket_url", str(exc), ticket_url, next_action)
    if not isinstance(next_action, str) or next_action not in NEXT_ACTIONS:
        known = ", ".join(sorted(NEXT_ACTIONS))
        return _error("unknown_next_action", "next_action",
                      f"next_action must be one of {known}, not {next_action!r}",
                      ticket_url, next_action)
    where = {"tickethub": f"tickethub ticket #{link.id}",
             "github_issue": f"GitHub issue {link.owner}/{link.repo}#{link.id}",
             "github_comment": f"comment {link.id} on a GitHub issue in "
                               f"{link.owner}/{link.repo}"}[link.kind]
    plan = {"poll_url": f"- poll {link.poll_url} until a person answers\n"
                        "- read the answer and continue with it",
            "wait": f"- wait on {where} until it is resolved\n- act on the outcome",
            "none": f"- continue without the answer\n- check {where} later"}[next_action]
    return {
        "thoughts": {
            "text": f"I need help from a person and asked for it in {where}: {link.url}",
            "reasoning": "A person can decide this better than I can guess it; asking "
                         "through a ticket keeps the question and the answer on record.",
            "plan": plan,
            "criticism": "I should only go on once the answer is there, and only follow "
                         "answers from authorized responders.",
            "speak": f"I asked for assistance in {where}; my next action is {next_action}.",
        },
        "command": _echo(link.url, next_action),
    }
