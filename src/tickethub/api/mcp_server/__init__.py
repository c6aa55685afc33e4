"""The MCP server: ``ask_human``, ``await_answer``, ``list_my_tickets``, ``post_update``,
over streamable HTTP at ``/mcp`` (:func:`mount`) and over stdio (``tickethub mcp``,
:func:`run_stdio`)."""

from tickethub.api.mcp_server.http import mount
from tickethub.api.mcp_server.stdio import run_stdio

__all__ = ["mount", "run_stdio"]
