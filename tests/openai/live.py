"""Real servers on loopback for the OpenAI and MCP door tests: the hub under uvicorn (so
streams really stream) and an upstream that speaks OpenAI's wire format, its bodies built
from the official ``openai`` SDK's own types."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.conftest import LIVE_TIMEOUT

UPSTREAM_KEY = "sk-upstream-test"


@dataclass
class Hub:
    """A hub served on loopback, with an agent's and a responder's token."""

    url: str
    runtime: Any
    agent: str
    responder: str

    def headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    def client(self, token: str) -> httpx.AsyncClient:
        """An HTTP client of the hub signed in with ``token`` (``LIVE_TIMEOUT``)."""
        return httpx.AsyncClient(base_url=self.url, headers=self.headers(token),
                                 timeout=LIVE_TIMEOUT)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """An ASGI app served by uvicorn in a thread, lifespan included."""

    def __init__(self, app: Any, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                lifespan="on", timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@dataclass
class Reply:
    """One scripted upstream answer."""

    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200
    delay: float = 0.0


class FakeUpstream:
    """An OpenAI-compatible endpoint: answers from ``replies`` in order (else echoes the
    last user message), streams when asked, and records every request it got."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(routes=[
            Route("/v1/chat/completions", self.chat, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
        ])

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [
            {"id": "gpt-test", "object": "model", "created": 1700000000, "owned_by": "test"},
            {"id": "other-model", "object": "model", "created": 1700000000, "owned_by": "t"},
        ]})

    async def chat(self, request: Request) -> Response:
        if request.headers.get("authorization") != f"Bearer {UPSTREAM_KEY}":
            return JSONResponse({"error": {"message": "Incorrect API key provided",
                                           "type": "invalid_request_error", "param": None,
                                           "code": "invalid_api_key"}}, status_code=401)
        body = await request.json()
        self.requests.append(body)
        reply = self.replies.pop(0) if self.replies else Reply(
            content="echo: " + str(body["messages"][-1].get("content")))
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.status >= 400:
            return JSONResponse({"error": {"message": f"upstream says {reply.status}",
                                           "type": "server_error", "param": None,
                                           "code": None}}, status_code=reply.status)
        if body.get("model") not in ("gpt-test", "other-model"):
            return JSONResponse({"error": {"message": "The model does not exist",
                                           "type": "invalid_request_error", "param": "model",
                                           "code": "model_not_found"}}, status_code=404)
        calls = [{"id": f"call_{i}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps(args)}}
                 for i, (name, args) in enumerate(reply.tool_calls)]
        finish = "tool_calls" if calls else "stop"
        if not body.get("stream"):
            completion = ChatCompletion.model_validate({
                "id": "chatcmpl-up", "object": "chat.completion", "created": int(time.time()),
                "model": body["model"],
                "choices": [{"index": 0, "finish_reason": finish, "logprobs": None,
                             "message": {"role": "assistant", "content": reply.content,
                                         "tool_calls": calls or None}}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12},
            })
            return Response(completion.model_dump_json(exclude_none=True),
                            media_type="application/json")

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            c = ChatCompletionChunk.model_validate({
                "id": "chatcmpl-up", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": body["model"],
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            })
            return b"data: " + c.model_dump_json(exclude_none=True).encode() + b"\n\n"

        async def events() -> Any:
            yield chunk({"role": "assistant", "content": ""})
            for word in (reply.content or "").split(" "):
                yield chunk({"content": word + " "})
            for i, call in enumerate(calls):
                yield chunk({"tool_calls": [{"index": i, **call}]})
            yield chunk({}, finish)
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")
