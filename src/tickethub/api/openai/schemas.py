"""Wire shapes of OpenAI's chat-completions API: the request as the door accepts it and
the completion / chunk bodies it sends back."""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tickethub.llm.port import Completion


class ChatMessage(BaseModel):
    """One message; other fields (``name``, ``refusal``, ...) pass through untouched."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None

    @model_validator(mode="after")
    def _content_where_needed(self) -> ChatMessage:
        if self.role in ("system", "developer", "user") and self.content is None:
            raise ValueError(f"a {self.role} message needs content")
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs tool_call_id")
        if self.role == "assistant" and self.content is None and not self.tool_calls:
            raise ValueError("an assistant message needs content or tool_calls")
        return self


class FunctionDef(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.\-]+$")
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ToolDef(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: Literal["function"]
    function: FunctionDef


class ChatRequest(BaseModel):
    """The request body of ``POST /v1/chat/completions``. Unknown fields are kept and
    forwarded to an upstream as they are."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=200)
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    tools: list[ToolDef] | None = None
    response_format: dict[str, Any] | None = None
    metadata: dict[str, str] | None = None

    @property
    def include_usage(self) -> bool:
        return bool((self.stream_options or {}).get("include_usage"))

    def wire_messages(self) -> list[dict[str, Any]]:
        return [m.model_dump(exclude_none=True) for m in self.messages]

    def wire_tools(self) -> list[dict[str, Any]]:
        return [t.model_dump(exclude_none=True) for t in self.tools or ()]


def completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def completion_body(
    cid: str, model: str, completion: Completion, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A ``chat.completion`` object, as OpenAI sends it."""
    body: dict[str, Any] = {
        "id": cid, "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": completion.to_message(), "logprobs": None,
                     "finish_reason": completion.finish_reason}],
        "usage": usage_body(completion),
        "system_fingerprint": None,
    }
    if extra:
        body.update(extra)
    return body


def usage_body(completion: Completion) -> dict[str, int]:
    u = completion.usage
    return {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
            "total_tokens": u.total_tokens}


def chunks_of(
    cid: str, model: str, completion: Completion, *, include_usage: bool,
    extra: dict[str, Any] | None = None, piece: int = 64,
) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects that stream ``completion``: the role, the
    content in pieces, each tool call, the finish reason, and usage when asked for."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if extra:
            body.update(extra)
        return body

    out = [chunk({"role": "assistant", "content": ""})]
    text = completion.content or ""
    out += [chunk({"content": text[i:i + piece]}) for i in range(0, len(text), piece)]
    for index, call in enumerate(completion.tool_calls):
        wire = call.to_wire()
        out.append(chunk({"tool_calls": [{"index": index, **wire}]}))
    out.append(chunk({}, completion.finish_reason))
    if include_usage:
        final = chunk({})
        final["choices"] = []
        final["usage"] = usage_body(completion)
        out.append(final)
    return out
