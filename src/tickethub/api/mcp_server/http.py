"""``/mcp``: the MCP server over streamable HTTP, on the hub's own app.

Every request needs a hub token (``Authorization: Bearer``); the tools act as the actor
behind it. The session manager's task group runs within the app's lifespan.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from tickethub.api.deps import actor_for, bearer_of, bearer_token, client_address
from tickethub.api.mcp_server.desk import Desk, LocalDesk
from tickethub.api.mcp_server.tools import build_server, tool_error
from tickethub.api.problems import render
from tickethub.errors import DatabaseUnavailable, TickethubError
from tickethub.services.doors import TicketsDoor

PATH = "/mcp"


class _Authenticated:
    """Checks the bearer token before the MCP transport sees the request."""

    def __init__(self, hub: TicketsDoor, handle: object) -> None:
        self._hub = hub
        self._handle = handle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                await actor_for(self._hub, bearer_token(Request(scope)), client_address(scope))
            except TickethubError as exc:
                await render(exc.problem(), scope)(scope, receive, send)
                return
        await self._handle(scope, receive, send)  # type: ignore[operator]


def mount(app: FastAPI, hub: TicketsDoor) -> None:
    """Serve MCP at ``/mcp`` on ``app`` and run its session manager in the app's lifespan
    (through ``app.state.lifespan_hooks``)."""

    async def desk_for(ctx: Context) -> Desk:
        headers = ctx.headers or {}
        try:  # checked (and throttled) by _Authenticated already: usually a cache hit
            actor = await actor_for(hub, bearer_of(headers.get("authorization", "")))
        except (TickethubError, DatabaseUnavailable) as exc:
            raise tool_error(exc.problem()) from None
        return LocalDesk(hub, actor)

    server = build_server(desk_for, hub.settings.mcp_wait_seconds)
    # Bearer tokens are not ambient credentials, so DNS rebinding cannot borrow them;
    # host checks would only break hubs served under their public name.
    server.streamable_http_app(
        stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    manager = server.session_manager
    app.router.routes.append(Route(PATH, endpoint=_Authenticated(hub, manager.handle_request),
                                   methods=["GET", "POST", "DELETE"]))

    @asynccontextmanager
    async def running(_: FastAPI) -> AsyncIterator[None]:
        async with manager.run():
            yield

    app.state.lifespan_hooks.append(running)
