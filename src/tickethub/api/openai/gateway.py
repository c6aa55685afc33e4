"""The OpenAI door's state for one app: the human door and, when an upstream is
configured, the proxy with its HTTP client (closed by :func:`lifespan`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request

from tickethub.api.deps import actor_for, bearer_token, client_address
from tickethub.api.openai.human import HumanDoor
from tickethub.api.openai.proxy import ProxyDoor
from tickethub.domain.actors import Actor
from tickethub.llm.openai_compatible import OpenAICompatible
from tickethub.services.doors import TicketsDoor


class Gateway:
    def __init__(self, hub: TicketsDoor) -> None:
        settings = hub.settings
        self.hub = hub
        self.human = HumanDoor(hub)
        self.upstream: OpenAICompatible | None = None
        self.proxy: ProxyDoor | None = None
        if settings.upstream_base_url:
            key = settings.upstream_api_key
            self.upstream = OpenAICompatible(
                settings.upstream_base_url, key.get_secret_value() if key else None,
                timeout=settings.upstream_timeout_seconds,
            )
            self.proxy = ProxyDoor(hub, self.upstream)

    async def aclose(self) -> None:
        if self.upstream is not None:
            await self.upstream.aclose()


def gateway(request: Request) -> Gateway:
    """The app's gateway, made at first use."""
    state = request.app.state
    found: Gateway | None = getattr(state, "openai_gateway", None)
    if found is None:
        found = state.openai_gateway = Gateway(state.hub)
    return found


async def caller(request: Request, gate: Gateway = Depends(gateway)) -> Actor:
    """The actor behind the API key (``Authorization: Bearer``); 401 without a valid one."""
    return await actor_for(gate.hub, bearer_token(request),
                           client_address(request.scope))


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Closes the upstream client when the app stops."""
    try:
        yield
    finally:
        found: Gateway | None = getattr(app.state, "openai_gateway", None)
        if found is not None:
            await found.aclose()
            app.state.openai_gateway = None
