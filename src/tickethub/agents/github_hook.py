"""Personal agents on the GitHub channel: every webhook delivery the channel takes in is
also offered to the kernel (``GithubInbound.listeners``)."""

from __future__ import annotations

import logging
from typing import Any

from tickethub.agents.credentials import GithubCredentials
from tickethub.agents.github_events import agent_event
from tickethub.agents.kernel import Kernel
from tickethub.channels.github.client import GitHubGateway

log = logging.getLogger(__name__)


def attach(kernel: Kernel, inbound: Any, gateway: GitHubGateway,
           credentials: GithubCredentials | None = None) -> None:
    """Route ``inbound``'s deliveries to ``kernel``; results go back through ``gateway``
    (the hub's GitHub client) unless ``credentials`` binds a run to a narrower token."""
    if credentials is not None:
        kernel.credentials["github"] = credentials.prepare

    async def listener(event: str, payload: dict[str, Any]) -> None:
        try:
            agent_ev = agent_event(event, payload, gateway)
            if agent_ev is not None:
                await kernel.dispatch(agent_ev)
        except Exception:  # agents never break the channel's inbox
            log.exception("personal agents could not take GitHub %s delivery", event)

    inbound.listeners.append(listener)
    inbound.claims = kernel.claims
