"""The LLM port: ``complete(messages, tools, response_format) -> Completion``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Message = dict[str, Any]
"""One chat message in OpenAI's shape: ``{"role": ..., "content": ..., ...}``."""

Tool = dict[str, Any]
"""One tool in OpenAI's shape: ``{"type": "function", "function": {name, parameters}}``."""

FinishReason = Literal["stop", "length", "tool_calls", "content_filter"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A function call the model asks the caller to make; ``arguments`` is a JSON object."""

    id: str
    name: str
    arguments: dict[str, Any]

    def to_wire(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": json.dumps(self.arguments)}}


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class Completion:
    """What a model (or a person) replied: text and/or tool calls, and why it stopped."""

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: FinishReason = "stop"
    usage: Usage = field(default_factory=Usage)
    model: str = ""

    def to_message(self) -> Message:
        """The reply as an assistant message, ready to append to the conversation."""
        message: Message = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_wire() for call in self.tool_calls]
        return message


class LLM(Protocol):
    """Anything that continues a conversation."""

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> Completion:
        """The next assistant turn for ``messages``. ``tools`` it may call, and
        ``response_format`` (OpenAI's ``json_schema``/``json_object``) it should follow.
        Raises :class:`~tickethub.llm.errors.UpstreamError` when the provider fails."""
        ...


def tool_name(tool: Tool) -> str:
    """The function name of an OpenAI tool definition ('' when it has none)."""
    function = tool.get("function") if isinstance(tool, dict) else None
    return str(function.get("name", "")) if isinstance(function, dict) else ""


def tool_schema(tool: Tool) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments (any object when the tool declares none)."""
    function = tool.get("function") or {}
    parameters = function.get("parameters") if isinstance(function, dict) else None
    return parameters if isinstance(parameters, dict) else {"type": "object"}


def estimate_tokens(text: str) -> int:
    """A rough token count (4 characters a token) for providers that report no usage."""
    return (len(text) + 3) // 4
