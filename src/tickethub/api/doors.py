"""The registry of the hub's doors, kept like its components (``server/components.py``):
the built-ins in :data:`BUILTINS`, in mounting order, then plugins' doors under the
``tickethub.doors`` entry points, mounted the same way.

A :class:`Door` adds its routes to the app (and, for background work of its own, a
lifespan hook to ``app.state.lifespan_hooks``). Whatever it mounts is served like the
built-ins: inside the middleware stack (request ids, the body limit, the error guard),
its errors rendered by the one renderer (``api/problems.py``) in its routes' wire
format, and listed in the OpenAPI document.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from fastapi import APIRouter, FastAPI

from tickethub import plugins
from tickethub.api import (
    admin,
    agent_protocol,
    events,
    hooks_chat,
    hooks_github,
    mcp_server,
    metrics,
    tickets,
)
from tickethub.api import openai as openai_door
from tickethub.api.hooks_agent_runs import router as agent_runs_hooks
from tickethub.api.hooks_agents import router as agents_hooks
from tickethub.services.doors import AppHub
from tickethub.web import mount as mount_web

ENTRY_POINTS = "tickethub.doors"

Mount = Callable[[FastAPI, AppHub], None]
"""Adds a door's routes to the app for the hub (``app.include_router``, ``app.mount``)."""
Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[None]]
"""A door's background work: entered when the app starts serving, left when it stops."""


@dataclass(frozen=True)
class Door:
    """A way into the hub: ``mount(app, hub)`` adds its routes when the app is built."""

    name: str
    mount: Mount


def routers(*included: APIRouter, lifespan: Lifespan | None = None) -> Mount:
    """A door's ``mount`` that includes ``included`` (and adds ``lifespan``, an
    ``app -> async context manager`` running while the app serves)."""

    def mount(app: FastAPI, hub: AppHub) -> None:
        for router in included:
            app.include_router(router)
        if lifespan is not None:
            app.state.lifespan_hooks.append(lifespan)

    return mount


BUILTINS: tuple[Door, ...] = (
    Door("native", routers(tickets.router, events.router, admin.router)),
    Door("metrics", routers(metrics.router)),  # GET /metrics (ops/, docs/operations.md)
    Door("github_hooks", routers(hooks_github.router)),  # channels/github
    Door("chat_hooks", routers(hooks_chat.router)),  # channels/chat_hooks
    # personal agents: their event hooks, and Actions runs fetching context and results
    Door("agent_hooks", routers(agents_hooks, agent_runs_hooks)),
    Door("agent_protocol", routers(agent_protocol.router, lifespan=agent_protocol.lifespan)),
    Door("openai", routers(openai_door.router, lifespan=openai_door.lifespan)),
    Door("mcp", mcp_server.mount),
    # the people's web inbox: /, /t/{id}, /tree/{id}, /login (web/)
    Door("web", lambda app, hub: mount_web(app)),
)


def registered() -> list[Door]:
    """Every door: the built-ins, then those of installed plugins."""
    return [*BUILTINS, *plugins.offered(ENTRY_POINTS, Door)]
