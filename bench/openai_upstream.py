"""A minimal OpenAI-compatible upstream for ``bench.openai_proxy``: answers every chat
completion at once (JSON, or SSE when ``stream`` is true), so what the bench measures is
the proxy, not a model. ``python -m bench.openai_upstream --port N``."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import AsyncIterator

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

CHUNKS = 8


def _completion(model: str) -> bytes:
    return json.dumps({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": "pong"}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
    }).encode()


def _chunk(model: str, delta: dict[str, str], finish: str | None = None) -> bytes:
    body = {"id": "chatcmpl-bench", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


async def chat(request: Request) -> Response:
    body = json.loads(await request.body())
    model = body.get("model", "bench")
    if not body.get("stream"):
        return Response(_completion(model), media_type="application/json")

    async def events() -> AsyncIterator[bytes]:
        yield _chunk(model, {"role": "assistant", "content": ""})
        for n in range(CHUNKS):
            yield _chunk(model, {"content": f"tok{n} "})
        yield _chunk(model, {}, "stop")
        yield b"data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


async def models(request: Request) -> Response:
    return Response(json.dumps({"object": "list", "data": [
        {"id": "bench-model", "object": "model", "created": 0, "owned_by": "bench"}]}),
        media_type="application/json")


app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]),
                        Route("/v1/models", models)])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning",
                access_log=False)
