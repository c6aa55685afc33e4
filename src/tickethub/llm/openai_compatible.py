"""``OpenAICompatible``: any endpoint speaking OpenAI's chat-completions wire format
(OpenAI, Ollama, vLLM, llama.cpp server), reached over HTTP with a base URL and a key."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpcore

from tickethub.llm.errors import (
    UpstreamAuthFailed,
    UpstreamError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from tickethub.llm.port import Completion, Message, Tool, ToolCall, Usage


@dataclass(frozen=True, slots=True)
class UpstreamReply:
    """A raw upstream answer: its status and body bytes (JSON in OpenAI's shape)."""

    status: int
    content: bytes

    @property
    def body(self) -> dict[str, Any]:
        return _json_object(self.content)


_NETWORK_ERRORS = (httpcore.NetworkError, httpcore.ProtocolError, httpcore.UnsupportedProtocol,
                   httpcore.ProxyError, OSError)


class OpenAICompatible:
    """The upstream client. ``complete`` is the LLM port; ``send``, ``stream`` and
    ``models`` are the raw calls the OpenAI door uses to pass requests through unchanged.

    Connection failures and 5xx answers raise :class:`UpstreamUnavailable` (502), a
    timeout raises :class:`UpstreamTimeout` (504), a refused key (401/403)
    :class:`UpstreamAuthFailed` (502). Any other 4xx answer is the caller's mistake and
    comes back as it is (``UpstreamReply``), for the caller to relay.

    It speaks HTTP through httpcore's connection pool (TLS, keep-alive, streaming) rather
    than httpx: the proxy's added latency is the point, and httpx's request and response
    models cost about half a millisecond more per call."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        model: str = "",
        timeout: float = 60.0,
        connect_timeout: float = 5.0,
        max_connections: int = 200,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._headers = [(b"content-type", b"application/json"),
                         (b"accept", b"application/json, text/event-stream")]
        if api_key:
            self._headers.append((b"authorization", f"Bearer {api_key}".encode()))
        self._extensions = {"timeout": {"connect": connect_timeout, "read": timeout,
                                        "write": timeout, "pool": timeout}}
        self._pool = httpcore.AsyncConnectionPool(
            max_connections=max_connections, max_keepalive_connections=50,
            keepalive_expiry=30.0,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()

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
        """POST ``/chat/completions`` with ``body`` (``stream`` must be false)."""
        return await self.send(json.dumps(body).encode())

    async def send(self, content: bytes) -> UpstreamReply:
        """POST ``/chat/completions`` with a request body already in JSON, unchanged."""
        try:
            response = await self._pool.request(
                "POST", f"{self.base_url}/chat/completions", headers=self._headers,
                content=content, extensions=self._extensions)
        except httpcore.TimeoutException as exc:
            raise self._timeout(exc) from None
        except _NETWORK_ERRORS as exc:
            raise self._unreachable(exc) from None
        return self._checked(response.status, response.content)

    @asynccontextmanager
    async def stream(self, content: bytes) -> AsyncIterator[StreamedReply]:
        """POST a streaming request; yields the open response once its status is in.
        A failure before the first byte raises like ``send``."""
        try:
            async with self._pool.stream(
                    "POST", f"{self.base_url}/chat/completions", headers=self._headers,
                    content=content, extensions=self._extensions) as response:
                if response.status >= 400:
                    self._checked(response.status, await response.aread())
                yield StreamedReply(response)
        except httpcore.TimeoutException as exc:
            raise self._timeout(exc) from None
        except _NETWORK_ERRORS as exc:
            raise self._unreachable(exc) from None

    async def models(self) -> list[dict[str, Any]]:
        """The upstream's ``GET /models`` list."""
        try:
            response = await self._pool.request("GET", f"{self.base_url}/models",
                                                headers=self._headers,
                                                extensions=self._extensions)
        except httpcore.TimeoutException as exc:
            raise self._timeout(exc) from None
        except _NETWORK_ERRORS as exc:
            raise self._unreachable(exc) from None
        reply = self._checked(response.status, response.content)
        data = reply.body.get("data") if reply.status < 400 else None
        return [m for m in data if isinstance(m, dict)] if isinstance(data, list) else []

    # -- internals -----------------------------------------------------------------------

    def _checked(self, status: int, content: bytes) -> UpstreamReply:
        if status in (401, 403):
            raise UpstreamAuthFailed(
                f"the upstream at {self.base_url} refused the hub's API key ({status}): "
                f"{error_message(_json_object(content))}; check upstream_api_key")
        if status >= 500:
            raise UpstreamUnavailable(
                f"the upstream at {self.base_url} failed with {status}: "
                f"{error_message(_json_object(content))}")
        return UpstreamReply(status, content)

    def _timeout(self, exc: Exception) -> UpstreamTimeout:
        return UpstreamTimeout(f"the upstream at {self.base_url} did not answer in time "
                               f"({type(exc).__name__})")

    def _unreachable(self, exc: Exception) -> UpstreamUnavailable:
        return UpstreamUnavailable(f"the upstream at {self.base_url} is unreachable: "
                                   f"{type(exc).__name__}: {exc}".rstrip(": "))


class StreamedReply:
    """An upstream response being streamed: its status, content type and raw bytes."""

    def __init__(self, response: httpcore.Response) -> None:
        self.status = response.status
        self._response = response
        headers = {k.lower(): v for k, v in response.headers}
        self.content_type = headers.get(b"content-type", b"text/event-stream").decode()

    async def read(self) -> bytes:
        return await self._response.aread()

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        return self._response.aiter_stream()


def _json_object(content: bytes) -> dict[str, Any]:
    try:
        body = json.loads(content) if content else {}
    except ValueError:
        return {"error": {"message": content[:500].decode("utf-8", "replace"),
                          "type": "upstream_error", "code": None}}
    return body if isinstance(body, dict) else {"data": body}


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
