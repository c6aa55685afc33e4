"""The GitHub channel: tickets live as GitHub issues, and people with write access
steer agents from the comments.

``install(hub)`` builds the pieces on the hub (a component :class:`Host`) and registers
them: the mirror (an outbound ``Channel`` on the hub's delivery queue), the webhook inbox
worker and the poller (background loops); :data:`component` is the channel as a hub
component, on when a token or a GitHub App is set. ``/hooks/github``
(``api/hooks_github.py``) feeds the inbox. See docs/github.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from tickethub.channels.github.client import GitHubGateway, RetryPolicy, build_github
from tickethub.channels.github.importer import GithubImporter
from tickethub.channels.github.inbound import GithubInbound
from tickethub.channels.github.intake import WebhookIntake
from tickethub.channels.github.mirror import GithubMirror
from tickethub.channels.github.permissions import PermissionCache
from tickethub.channels.github.polling import CommentPoller
from tickethub.services.github_sync import GithubSyncService, RetrySchedule
from tickethub.services.host import Component, Host
from tickethub.settings import Settings
from tickethub.store.github_store import SqlGithubStore


@dataclass
class GithubChannel:
    sync: GithubSyncService
    gateway: GitHubGateway
    permissions: PermissionCache
    mirror: GithubMirror
    inbound: GithubInbound
    intake: WebhookIntake
    poller: CommentPoller
    importer: GithubImporter


def install(hub: Host, *, token: str | None = None,
            transport: httpx.AsyncBaseTransport | None = None,
            register: bool = True) -> GithubChannel:
    """Build the GitHub channel for ``hub`` (``token``/``transport`` override settings,
    for tests) and, with ``register``, add its channel and loops to the hub."""
    s = hub.settings
    github = build_github(
        token=token or (s.github_token.get_secret_value() if s.github_token else None),
        api_url=s.github_api_url,
        app_id=s.github_app_id,
        app_private_key=(s.github_app_private_key.get_secret_value()
                         if s.github_app_private_key else None),
        app_installation_id=s.github_app_installation_id,
        transport=transport,
        write_interval=s.github_write_interval_seconds,
        retry=RetryPolicy(3, s.github_backoff_seconds, s.github_retry_inline_max_seconds),
    )
    gateway = GitHubGateway(github)
    sync = GithubSyncService(SqlGithubStore(hub.store), hub.clock, RetrySchedule(
        s.github_backoff_seconds, s.github_inbox_backoff_max_seconds,
        s.github_inbox_retry_hours * 3600))
    # The webhook inbox retries a failed delivery on its own schedule, so its lookups
    # fail at once instead of holding up the deliveries behind it.
    permissions = PermissionCache(gateway.without_retries(), s.github_permission_ttl_seconds)
    mirror = GithubMirror(hub.tickets, sync, gateway,
                          lambda ticket_id: hub.public_url(f"/api/v1/tickets/{ticket_id}"))
    inbound = GithubInbound(hub.tickets, sync, permissions, mirror, gateway, hub.clock)
    importer = GithubImporter(hub.tickets, sync, gateway, inbound)
    inbound.importer = importer
    intake = WebhookIntake(sync, inbound, hub.clock)
    poller = CommentPoller(sync, inbound, gateway, hub.clock, s.github_poll_seconds)
    channel = GithubChannel(sync, gateway, permissions, mirror, inbound, intake, poller,
                            importer)
    if register:
        hub.add_channel(mirror)
        hub.add_loop(intake.run)
        hub.add_loop(poller.run)
        hub.provide("github", channel)
    return channel


def _enabled(settings: Settings) -> bool:
    return settings.github_token is not None or bool(settings.github_app_id)


component = Component("github", _enabled, install)
