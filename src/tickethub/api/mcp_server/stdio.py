"""``tickethub mcp``: the MCP server over stdio, acting for the token's actor on a hub
reached over HTTP."""

from __future__ import annotations

from mcp.server.mcpserver import Context

from tickethub.api.mcp_server.desk import Desk
from tickethub.api.mcp_server.remote import RemoteDesk
from tickethub.api.mcp_server.tools import build_server


async def run_stdio(url: str, token: str, max_wait: float = 50.0) -> None:
    """Serve MCP on stdin/stdout until the client closes it."""
    desk = RemoteDesk(url, token)

    async def desk_for(_: Context) -> Desk:
        return desk

    try:
        await build_server(desk_for, max_wait).run_stdio_async()
    finally:
        await desk.aclose()
