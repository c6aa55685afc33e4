"""``tickethub mcp``: serve the MCP tools over stdio for an MCP client (Claude Desktop,
Cursor, an agent framework), acting for a token on a running hub."""

from __future__ import annotations

import anyio
import click


@click.command("mcp")
@click.option("--url", envvar="TICKETHUB_URL", default="http://127.0.0.1:8080",
              show_default=True, help="The hub's URL [env TICKETHUB_URL].")
@click.option("--token", envvar="TICKETHUB_TOKEN", required=True,
              help="The agent's hub token [env TICKETHUB_TOKEN].")
@click.option("--max-wait", type=click.FloatRange(1, 50), default=50.0, show_default=True,
              help="Longest a tool call waits for an answer, in seconds.")
def mcp(url: str, token: str, max_wait: float) -> None:
    """Run the MCP server over stdio (ask_human, await_answer, list_my_tickets,
    post_update)."""
    from tickethub.api.mcp_server import run_stdio

    anyio.run(run_stdio, url, token, max_wait)
