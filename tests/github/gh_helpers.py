"""Helpers for the GitHub channel tests: constants, waiting, and signed webhook
deliveries built from the community webhook examples."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import gh_examples
import httpx

from tests import waiting
from tickethub.channels.github.signature import sign

ADMIN_TOKEN = "th_admin_" + "x" * 40  # the root conftest's admin token
SECRET = "whsec_" + "s" * 30
REPO = "octo-org/hello-world"


_debug: Callable[[], None] | None = None  # set by tests to print state on a timeout


def _explain() -> None:
    if _debug is not None:
        _debug()


async def eventually(check: Callable[[], Any], what: str = "the condition", *,
                     seconds: float = 20.0) -> Any:
    """``tests.waiting.eventually`` with the GitHub tests' 20 s default, calling the
    ``_debug`` hook (when a test has set one) before it fails."""
    return await waiting.eventually(check, what, seconds=seconds, on_timeout=_explain)


def comment_payload(action: str, repo: str, number: int, comment_id: int, login: str,
                    body: str, association: str = "COLLABORATOR") -> dict[str, Any]:
    """The community ``issue_comment`` example, re-aimed at our repository and issue."""
    payload = gh_examples.webhook("issue_comment", action)
    owner, name = repo.split("/")
    payload["repository"].update(full_name=repo, name=name)
    payload["repository"]["owner"]["login"] = owner
    payload["issue"]["number"] = number
    payload["comment"].update(
        id=comment_id, body=body, author_association=association,
        issue_url=f"https://api.github.com/repos/{repo}/issues/{number}",
        html_url=f"https://github.com/{repo}/issues/{number}#issuecomment-{comment_id}")
    payload["comment"]["user"]["login"] = login
    payload["sender"]["login"] = login
    return payload


def issue_payload(action: str, repo: str, number: int, sender: str,
                  **issue_fields: Any) -> dict[str, Any]:
    try:
        payload = gh_examples.webhook("issues", action)
    except KeyError:  # the examples have no issues.closed: adapt issues.reopened
        payload = gh_examples.webhook("issues", "reopened")
        payload["action"] = action
    owner, name = repo.split("/")
    payload["repository"].update(full_name=repo, name=name)
    payload["repository"]["owner"]["login"] = owner
    payload["issue"]["number"] = number
    payload["issue"].update(issue_fields)
    payload["sender"]["login"] = sender
    return payload


async def deliver(client: httpx.AsyncClient, event: str, payload: dict[str, Any], *,
                  delivery: str | None = None, secret: str | None = SECRET,
                  signature: str | None = None) -> httpx.Response:
    body = json.dumps(payload).encode()
    headers = {"Content-Type": "application/json", "X-GitHub-Event": event,
               "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
               "User-Agent": "GitHub-Hookshot/test"}
    if signature is not None:
        headers["X-Hub-Signature-256"] = signature
    elif secret is not None:
        headers["X-Hub-Signature-256"] = sign(secret, body)
    return await client.post("/hooks/github", content=body, headers=headers)
