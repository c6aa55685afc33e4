"""Request dependencies: the runtime and the authenticated actor."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from fastapi import Depends, Request
from starlette.types import Scope

from tickethub.domain.actors import Actor, require_admin
from tickethub.services.doors import AppHub, Door

T = TypeVar("T")


async def runtime(request: Request) -> AppHub:
    """The hub, which a door's handler declares as the narrow interface it needs
    (``services/doors.py``: ``hub: TicketsDoor = Depends(runtime)``). ``async``: FastAPI
    runs a plain ``def`` dependency in a worker thread, a thread hop per request for an
    attribute read."""
    hub: AppHub = request.app.state.hub
    return hub


def hub_of(request: Request) -> AppHub:
    """The hub serving ``request``, typed (what ``runtime`` gives a handler, for code
    that has the request and no dependency: the web pages, direct handlers)."""
    hub: AppHub = request.app.state.hub
    return hub


def bearer_token(request: Request) -> str | None:
    return bearer_of(request.headers.get("authorization", ""))


def bearer_of(authorization: str) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header value, else ``None``."""
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


async def current_actor(request: Request, hub: Door = Depends(runtime)) -> Actor:
    """The actor behind the bearer token; 401 without a valid one."""
    return await actor_for(hub, bearer_token(request), client_address(request.scope))


def client_address(scope: Scope) -> str | None:
    """The client's address (behind trusted proxies, the one they forwarded)."""
    client = scope.get("client")
    return str(client[0]) if client else None


async def actor_for(hub: Door, token: str | None, client: str | None = None) -> Actor:
    """The actor behind ``token``: from the auth cache without a thread hop when it was
    checked moments ago, else from the store. 401 without a valid token; 429 while
    ``client`` is throttled for sending unknown ones."""
    actor = hub.auth.cached(token)
    if actor is None:
        actor = await call(hub.auth.authenticate, token, client)
    return actor


async def admin_actor(actor: Actor = Depends(current_actor)) -> Actor:
    require_admin(actor, "this endpoint")
    return actor


def channel_of(request: Request, default: str = "api") -> str:
    """Which channel a request came through (``X-Tickethub-Via``: cli, web, api, ...)."""
    return channel_named(request.headers.get("x-tickethub-via"), default)


def channel_named(via: str | None, default: str = "api") -> str:
    """The channel an ``X-Tickethub-Via`` value names (``default`` without a usable one)."""
    via = (via or default).strip().lower()
    return via[:50] if via.replace("-", "").replace("_", "").isalnum() else default


async def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a (blocking) service call in the worker thread pool."""
    return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))
