"""Which GitHub credential a run writes with — never one with more rights than its
manifest names, where GitHub lets us narrow it.

In order of preference:

1. the owner's own token, when they sealed one as the secret ``github-token`` (the
   agent then acts with exactly the person's authority, as the issue asks for "where they
   choose it");
2. with a GitHub App configured: an installation token minted for this run, limited to
   the event's repository and to the permissions the manifest's scopes need
   (``permissions_for``); GitHub expires it within the hour;
3. otherwise the hub's own client — the tools the kernel enforces still bound what the
   run can do.

Tokens live only in the run's client; they are never put in the context, the audit or
a log line (the owner's token is a sealed secret, so the box redacts it anyway).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx

from tickethub.agents.events import AgentEvent
from tickethub.agents.github_events import GithubSurface
from tickethub.agents.manifest import Manifest, Scope
from tickethub.channels.github.client import GitHubGateway, build_github
from tickethub.domain.agent_runs import AgentInstallation

OWN_TOKEN_SECRET = "github-token"
_WRITES_ISSUES = {Scope.COMMENT, Scope.EDIT_OWN_COMMENT, Scope.EDIT_OWNER_COMMENT,
                  Scope.LABEL}


def permissions_for(scopes: frozenset[Scope]) -> dict[str, str]:
    """The GitHub App permissions a manifest's scopes need: always read access to
    metadata and issues (the context), write to issues only for a writing scope."""
    issues = "write" if scopes & _WRITES_ISSUES else "read"
    return {"metadata": "read", "issues": issues}


class GithubCredentials:
    def __init__(self, hub_gateway: GitHubGateway, *, api_url: str,
                 own_token: Callable[[str], str | None],
                 app: tuple[str, str, int] | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._hub = hub_gateway
        self._api_url = api_url
        self._own_token = own_token
        self._app = app  # (app_id, private_key, installation_id)
        self._transport = transport

    async def prepare(self, install: AgentInstallation, manifest: Manifest,
                      event: AgentEvent) -> tuple[AgentEvent, str]:
        """``event`` with its surface bound to the run's credential, and which one
        (``own``, ``app-installation``, ``hub``)."""
        surface = event.surface
        if not isinstance(surface, GithubSurface):
            return event, "none"
        token = await asyncio.to_thread(self._own_token, install.owner)
        kind = "own"
        if token is None and self._app is not None:
            token = await self.mint(surface.repo, manifest.scopes)
            kind = "app-installation"
        if token is None:
            return event, "hub"
        gateway = GitHubGateway(build_github(token=token, api_url=self._api_url,
                                             transport=self._transport, write_interval=0))
        bound = GithubSurface(gateway, surface.repo, surface.number)
        return _with_surface(event, bound), kind

    async def dispatcher(self, owner: str, repo: str) -> tuple[GitHubGateway, str]:
        """A client that may dispatch workflows in ``repo`` (the Actions runner), and
        which credential it holds: the owner's own token, else an App installation
        token for ``repo`` with ``actions: write`` only, else the hub's client."""
        token = await asyncio.to_thread(self._own_token, owner)
        kind = "own"
        if token is None and self._app is not None:
            token = await self.mint(repo, permissions={"metadata": "read",
                                                       "actions": "write"})
            kind = "app-installation"
        if token is None:
            return self._hub, "hub"
        return GitHubGateway(build_github(token=token, api_url=self._api_url,
                                          transport=self._transport, write_interval=0)), kind

    async def mint(self, repo: str, scopes: frozenset[Scope] = frozenset(),
                   permissions: dict[str, str] | None = None) -> str:
        """An installation token for ``repo`` only, with ``permissions`` (default
        ``permissions_for(scopes)``)."""
        assert self._app is not None
        app_id, private_key, installation_id = self._app
        from githubkit import AppAuthStrategy, GitHub

        app = GitHub(AppAuthStrategy(app_id, private_key), base_url=self._api_url,
                     async_transport=self._transport, http_cache=False)
        body: dict[str, Any] = {"repositories": [repo.split("/", 1)[1]],
                                "permissions": permissions or permissions_for(scopes)}
        response = await GitHubGateway(app)._json(
            "POST", f"/app/installations/{installation_id}/access_tokens", json=body)
        return str(response["token"])


def _with_surface(event: AgentEvent, surface: GithubSurface) -> AgentEvent:
    return AgentEvent(event.name, event.author, event.text, surface, event.comment_id,
                      event.author_is_bot, event.payload)
