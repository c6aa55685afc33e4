"""The MCP tools: ``ask_human``, ``await_answer``, ``list_my_tickets``, ``post_update``.

No call blocks longer than the wait limit (at most 50 s; MCP clients cut calls near
60 s): ``ask_human`` returns the answer when it comes in time, else the ticket id to
pass to ``await_answer``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from tickethub import __version__
from tickethub.api.mcp_server.desk import JSON, Desk, Question
from tickethub.api.wire_types import Id
from tickethub.domain.status import Kind
from tickethub.errors import DatabaseUnavailable, Problem, TickethubError

DeskFor = Callable[[Context], Awaitable[Desk]]

INSTRUCTIONS = """Reach a person through tickethub. Use ask_human when you need a decision,
an approval or information only a person has; it returns the answer if it comes within
the wait, else a ticket_id: call await_answer(ticket_id) until status is no longer
waiting. post_update adds progress notes to a ticket; list_my_tickets shows yours."""


def view(ticket: JSON) -> JSON:
    """What an agent needs of a ticket: where it stands and the answer, if any."""
    answer = ticket.get("answer")
    return {
        "ticket_id": ticket["id"],
        "kind": ticket["kind"],
        "title": ticket["title"],
        "status": ticket["status"],
        "waiting": ticket.get("outcome") is None,
        "outcome": ticket.get("outcome"),
        "answer": None if answer is None else {
            "text": answer.get("text"), "data": answer.get("data"), "by": answer.get("by")},
        "ticket_url": ticket["url"],
    }


def _schema_for(options: list[str] | None, answer_schema: JSON | None) -> JSON | None:
    if options and answer_schema:
        raise ToolError("give either options or answer_schema, not both")
    if options:
        return {"enum": options}
    return answer_schema


def tool_error(problem: Problem, schema_param: str = "response_schema") -> ToolError:
    """This door's wire format of a problem: a tool error whose text is
    ``code: detail (field)``, plus when to try again for a problem that says so
    (``Retry-After``: a throttle, a database outage), since an MCP client sees only the
    text. ``schema_param``: what the tool calls the ticket's ``response_schema``."""
    field = problem.field
    if field is not None and field.split(".")[0] == "response_schema":
        field = schema_param + field[len("response_schema"):]
    text = f"{problem.code}: {problem.detail}" + (f" ({field})" if field else "")
    retry = problem.headers.get("Retry-After")
    if retry is not None:
        text += f"; try again in {retry} s"
    return ToolError(text)


async def _guard(work: Awaitable[Any], schema_param: str = "response_schema") -> Any:
    """The tool's result, or its problem as a :func:`tool_error`."""
    try:
        return await work
    except (TickethubError, DatabaseUnavailable) as exc:
        raise tool_error(exc.problem(), schema_param) from None


def build_server(desk_for: DeskFor, max_wait: float) -> MCPServer:
    """An MCP server whose tools act through the desk ``desk_for`` gives per call."""
    limit = min(max_wait, 50.0)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    server: MCPServer = MCPServer("tickethub", instructions=INSTRUCTIONS, version=__version__,
                                  log_level="WARNING")
    # The SDK configures root logging; the hub owns that (server/main.py), so undo it.
    root.handlers[:] = handlers
    root.setLevel(level)

    @server.tool()
    async def ask_human(
        question: Annotated[str, Field(min_length=1, max_length=500,
                                       description="The question, one line.")],
        ctx: Context,
        details: Annotated[str, Field(max_length=100_000,
                                      description="Context the person needs.")] = "",
        kind: Literal["question", "approval", "task", "info"] = "question",
        options: Annotated[list[str] | None, Field(
            min_length=2, description="The answers the person may pick from.")] = None,
        answer_schema: Annotated[JSON | None, Field(
            description="JSON Schema a structured answer must satisfy.")] = None,
        proposal: Annotated[Any, Field(
            description="For approvals: the action to approve.")] = None,
        deadline_seconds: Annotated[float | None, Field(
            gt=0, description="When the ticket expires unanswered.")] = None,
        wait_seconds: Annotated[float, Field(
            ge=0, le=50, description="How long to wait for the answer here.")] = limit,
    ) -> JSON:
        """Ask a person and wait up to wait_seconds (at most 50) for the answer.
        Returns the ticket with its answer, or with waiting=true and the ticket_id to pass
        to await_answer."""
        desk = await desk_for(ctx)
        asked = Question(
            title=question, body=details, kind=Kind(kind),
            response_schema=_schema_for(options, answer_schema), proposal=proposal,
            deadline_seconds=deadline_seconds,
        )
        ticket = await _guard(desk.ask(asked), "options" if options else "answer_schema")
        if wait_seconds > 0:
            ticket = await _guard(desk.wait(ticket["id"], min(wait_seconds, limit)))
        return view(ticket)

    @server.tool()
    async def await_answer(
        ticket_id: Id,
        ctx: Context,
        timeout: Annotated[float, Field(ge=0, le=50, description="Seconds, at most 50.")
                           ] = limit,
    ) -> JSON:
        """Wait up to timeout seconds (at most 50) for a ticket's answer; returns the
        ticket, with waiting=true if it is still open."""
        desk = await desk_for(ctx)
        return view(await _guard(desk.wait(ticket_id, min(timeout, limit))))

    @server.tool()
    async def list_my_tickets(
        ctx: Context,
        waiting_only: bool = False,
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
    ) -> JSON:
        """Your tickets, newest first (only those still waiting, if asked)."""
        desk = await desk_for(ctx)
        return {"tickets": [view(t) for t in await _guard(desk.mine(waiting_only, limit))]}

    @server.tool()
    async def post_update(
        ticket_id: Id,
        text: Annotated[str, Field(min_length=1, max_length=100_000)],
        ctx: Context,
    ) -> JSON:
        """Add a progress note or more context to a ticket."""
        desk = await desk_for(ctx)
        message = await _guard(desk.post(ticket_id, text))
        return {"ticket_id": ticket_id, "message_id": message["id"], "posted": True}

    return server
