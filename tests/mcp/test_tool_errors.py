"""The MCP door's wire format of a problem (``tool_error``): an MCP client sees only a
tool error's text, so the text carries the code, the field and when to try again."""

from __future__ import annotations

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from tickethub.api.mcp_server import tools
from tickethub.errors import DatabaseUnavailable, Throttled, ValidationFailed


def test_the_text_names_code_detail_and_field() -> None:
    error = tools.tool_error(ValidationFailed("too long", field="title").problem())
    assert str(error) == "validation_failed: too long (title)"


def test_the_tickets_schema_is_named_as_the_tool_calls_it() -> None:
    problem = ValidationFailed("bad regex", field="response_schema.pattern").problem()
    assert str(tools.tool_error(problem, "answer_schema")).endswith("(answer_schema.pattern)")


def test_a_problem_with_retry_after_says_when_to_try_again() -> None:
    error = tools.tool_error(Throttled("slow down", field="token", retry_after=3).problem())
    assert str(error) == "too_many_attempts: slow down (token); try again in 3 s"


async def test_a_database_outage_becomes_a_tool_error_with_its_retry() -> None:
    async def down() -> None:
        raise DatabaseUnavailable("connection refused")

    with pytest.raises(ToolError) as raised:
        await tools._guard(down())
    text = str(raised.value)
    assert text.startswith("database_unavailable: ")
    assert "connection refused" not in text  # the driver's words stay in the log
    assert text.endswith(f"; try again in {DatabaseUnavailable('x').retry_after} s")
