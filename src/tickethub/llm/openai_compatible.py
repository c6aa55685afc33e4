"""``OpenAICompatible``: any endpoint speaking OpenAI's chat-completions wire format
(OpenAI, Ollama, vLLM, llama.cpp server), reached over HTTP with a base URL and a key."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from tickethub.llm.errors import (
    UpstreamAuthFailed,
    UpstreamError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from tickethub.llm.port import Completion, Message, Tool, ToolCall, Usage


@dataclass(frozen=True, slots=True)
class UpstreamReply:
    """A raw upstream answer: its status and JSON body (in OpenAI's shape either way)."""

    status: int
    body: dict[str, Any]


class OpenAICompatible:
    """The upstream client. ``complete`` is the LLM port; ``create``, ``stream`` and
    ``models`` are the raw calls the OpenAI door uses to pass requests through unchanged.

    Connection failures and 5xx answers raise :class:`UpstreamUnavailable` (502), a
    timeout raises :class:`UpstreamTimeout` (504), a refused key (401/403)
    :class:`UpstreamAuthFailed` (502). Any other 4xx answer is the caller's mistake
    and comes back as it is (``UpstreamReply``), for the caller to relay."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        model: str = "",
        timeout: float = 60.0,
        connect_timeout: float = 5.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = http or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=connect_timeout), headers=headers,
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- the port ------------------------------------------------------------------------

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> Completion:
        body: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if tools:
            body["tools"] = list(tools)
        if response_format:
            body["response_format"] = response_format
        reply = await self.create(body)
        if reply.status >= 400:
            raise UpstreamError(f"the upstream refused the request ({reply.status}): "
                                f"{error_message(reply.body)}")
        return completion_of(reply.body)

    # -- raw calls -----------------------------------------------------------------------

    async def create(self, body: dict[str, Any]) -> UpstreamReply:
        """POST ``/chat/completions`` with ``body`` as is (``stream`` must be false)."""
        try:
            response = await self._http.post(f"{self.base_url}/chat/completions", json=body)
        except httpx.TimeoutException as exc:
            raise self._timeout(exc) from None
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None
        return self._reply(response.status_code, response.content)

    @asynccontextmanager
    async def stream(self, body: dict[str, Any]) -> AsyncIterator[httpx.Response]:
        """POST a streaming request; yields the open response once its status is in.
        A 5xx or failure before the first byte raises like ``create``."""
        request = self._http.build_request("POST", f"{self.base_url}/chat/completions",
                                           json=body)
        try:
            response = await self._http.send(request, stream=True)
        except httpx.TimeoutException as exc:
            raise self._timeout(exc) from None
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None
        try:
            if response.status_code >= 500 or response.status_code in (401, 403):
                content = await response.aread()
                self._reply(response.status_code, content)
            yield response
        finally:
            await response.aclose()

    async def models(self) -> list[dict[str, Any]]:
        """The upstream's ``GET /models`` list."""
        try:
            response = await self._http.get(f"{self.base_url}/models")
        except httpx.TimeoutException as exc:
            raise self._timeout(exc) from None
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None
        reply = self._reply(response.status_code, response.content)
        data = reply.body.get("data") if reply.status < 400 else None
        return [m for m in data if isinstance(m, dict)] if isinstance(data, list) else []

    # -- internals -----------------------------------------------------------------------

    def _reply(self, status: int, content: bytes) -> UpstreamReply:
        try:
            body = json.loads(content) if content else {}
        except ValueError:
            body = {"error": {"message": content[:500].decode("utf-8", "replace"),
                              "type": "upstream_error", "code": None}}
        if not isinstance(body, dict):
            body = {"data": body}
        if status in (401, 403):
            raise UpstreamAuthFailed(
                f"the upstream at {self.base_url} refused the hub's API key ({status}): "
                f"{error_message(body)}; check upstream_api_key")
        if status >= 500:
            raise UpstreamUnavailable(
                f"the upstream at {self.base_url} failed with {status}: {error_message(body)}")
        return UpstreamReply(status, body)

    def _timeout(self, exc: Exception) -> UpstreamTimeout:
        return UpstreamTimeout(f"the upstream at {self.base_url} did not answer in time "
                               f"({type(exc).__name__})")

    def _unreachable(self, exc: Exception) -> UpstreamUnavailable:
        return UpstreamUnavailable(f"the upstream at {self.base_url} is unreachable: "
                                   f"{type(exc).__name__}: {exc}".rstrip(": "))


def error_message(body: dict[str, Any]) -> str:
    """The message of an OpenAI-shaped error body, or the body itself, shortened."""
    error = body.get("error")
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    return json.dumps(body)[:300]


def completion_of(body: dict[str, Any]) -> Completion:
    """Parse a chat.completion body into a :class:`Completion` (first choice)."""
    choices = body.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    calls = []
    for raw in message.get("tool_calls") or []:
        function = raw.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except ValueError:
            arguments = {"_raw": function.get("arguments")}
        calls.append(ToolCall(str(raw.get("id", "")), str(function.get("name", "")),
                              arguments if isinstance(arguments, dict) else {"_value": arguments}))
    usage = body.get("usage") or {}
    return Completion(
        content=message.get("content"),
        tool_calls=tuple(calls),
        finish_reason=choice.get("finish_reason") or ("tool_calls" if calls else "stop"),
        usage=Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
        model=str(body.get("model", "")),
    )
