"""A local server that speaks OpenAI's chat-completions wire format with scripted replies
(content strings, functions of the request, or raw HTTP status + body), on a real socket."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

Reply = str | Callable[[dict[str, Any]], str] | tuple[int, dict[str, Any]]


class ScriptedOpenAI:
    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> JSONResponse:
            body = await request.json()
            self.requests.append(body)
            if not self.replies:
                return JSONResponse({"error": {"message": "no scripted reply left"}}, 500)
            reply = self.replies.pop(0)
            if isinstance(reply, tuple):
                return JSONResponse(reply[1], status_code=reply[0])
            content = reply(body) if callable(reply) else reply
            return JSONResponse({
                "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion",
                "created": int(time.time()), "model": body.get("model", "scripted"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            })

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                     log_level="warning", lifespan="off"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ScriptedOpenAI:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
