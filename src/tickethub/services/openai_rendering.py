"""How an OpenAI conversation reads on a ticket: the thread as people see it (system
prompt folded, tools listed) and the answer schemas that make a person's tool call or
structured reply exactly what the agent asked for."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tickethub.llm.port import Message, Tool, ToolCall, tool_name, tool_schema

TITLE_MAX = 120


def text_of(content: Any) -> str:
    """The text of a message ``content``: a string, or the text parts of a part list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif isinstance(part, dict):
                parts.append(f"[{part.get('type', 'part')}]")
        return "\n".join(parts)
    return json.dumps(content)


def title_of(messages: Sequence[Message]) -> str:
    """The first line of the first user message, shortened: what the thread is about."""
    for message in messages:
        if message.get("role") == "user":
            line = text_of(message.get("content")).strip().splitlines()
            if line and line[0].strip():
                title = line[0].strip()
                return title if len(title) <= TITLE_MAX else title[: TITLE_MAX - 1] + "…"
    return "A conversation from an agent"


def render_messages(messages: Sequence[Message]) -> str:
    """The turns, readable: system prompts folded into ``<details>``, tool calls and tool
    results spelled out."""
    blocks = []
    for message in messages:
        role = str(message.get("role", "?"))
        text = text_of(message.get("content")).strip()
        if role in ("system", "developer"):
            blocks.append(f"<details><summary>{role} prompt</summary>\n\n{text}\n\n</details>")
        elif role == "tool":
            blocks.append(f"**tool result** (`{message.get('tool_call_id', '')}`):\n\n{text}")
        elif role == "assistant":
            lines = [f"**assistant**: {text}"] if text else []
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                lines.append(f"**assistant** calls `{function.get('name')}"
                             f"({function.get('arguments', '')})`")
            blocks.append("\n\n".join(lines) or "**assistant**: (empty)")
        else:
            blocks.append(f"**{role}**: {text}")
    return "\n\n".join(blocks)


def render_tools(tools: Sequence[Tool]) -> str:
    """The tools the agent offers and how to answer with one."""
    if not tools:
        return ""
    lines = ["**Tools the agent offers** — answer with data "
             '`{"tool_calls": [{"name": ..., "arguments": {...}}]}` to call one, or '
             '`{"content": "..."}` (or plain text in `data.content`) to reply:']
    for tool in tools:
        function = tool.get("function") or {}
        params = json.dumps(tool_schema(tool).get("properties", {}))
        description = f" — {function.get('description')}" if function.get("description") else ""
        lines.append(f"- `{tool_name(tool)}` {params}{description}")
    return "\n".join(lines)


def render_calls(calls: Sequence[ToolCall]) -> str:
    return "\n".join(f"- `{c.name}` with `{json.dumps(c.arguments)}`" for c in calls)


def _embedded(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """A caller's schema as a part of a larger one: its own resource (``$id``), so its
    local references (``#/$defs/...``) still point into it, not into the whole."""
    return {**schema, "$id": f"urn:tickethub:{name}"}


def tools_answer_schema(tools: Sequence[Tool]) -> dict[str, Any]:
    """The answer schema of a conversation that offers ``tools``: either ``content`` text
    or ``tool_calls``, each call's ``arguments`` checked against its tool's schema."""
    names = [tool_name(t) for t in tools if tool_name(t)]
    branches = [
        {"if": {"properties": {"name": {"const": tool_name(t)}}, "required": ["name"]},
         "then": {"properties": {"arguments": _embedded(tool_schema(t), f"tool:{n}")}}}
        for n, t in enumerate(tools) if tool_name(t)
    ]
    call: dict[str, Any] = {
        "type": "object",
        "properties": {"name": {"enum": names}, "arguments": {"type": "object"}},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }
    if branches:
        call["allOf"] = branches
    return {
        "type": "object",
        "properties": {
            "content": {"type": "string"},
            "tool_calls": {"type": "array", "minItems": 1, "items": call},
        },
        "additionalProperties": False,
    }


def approval_schema(calls: Sequence[ToolCall], tools: Sequence[Tool]) -> dict[str, Any]:
    """The schema an edited approval must satisfy: the same calls, in order, each with
    arguments valid for its tool."""
    by_name = {tool_name(t): tool_schema(t) for t in tools}
    items = [
        {"type": "object",
         "properties": {"id": {"const": c.id}, "name": {"const": c.name},
                        "arguments": _embedded(by_name.get(c.name, {"type": "object"}),
                                               f"call:{n}")},
         "required": ["name", "arguments"], "additionalProperties": False}
        for n, c in enumerate(calls)
    ]
    return {
        "type": "object",
        "properties": {"tool_calls": {"type": "array", "prefixItems": items,
                                      "minItems": len(items), "maxItems": len(items)}},
        "required": ["tool_calls"],
        "additionalProperties": False,
    }
