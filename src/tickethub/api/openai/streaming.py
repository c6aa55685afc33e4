"""Server-sent events for ``stream=true``: chunks, keep-alive comments while a person is
being waited for, errors as OpenAI streams them, and the closing ``[DONE]``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from fastapi.responses import StreamingResponse

from tickethub.api.openai.errors import error_event

T = TypeVar("T")

KEEPALIVE = b": keep-alive\n\n"
DONE = b"data: [DONE]\n\n"
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def sse(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"


def sse_response(body: AsyncIterator[bytes], headers: dict[str, str] | None = None
                 ) -> StreamingResponse:
    return StreamingResponse(body, media_type="text/event-stream",
                             headers={**SSE_HEADERS, **(headers or {})})


async def held(
    work: Awaitable[T], keepalive: float, emit: Callable[[T], list[dict[str, Any]]]
) -> AsyncIterator[bytes]:
    """Stream the outcome of ``work``: a keep-alive comment at once and every
    ``keepalive`` seconds until it is done, then ``emit(result)`` as chunks and
    ``[DONE]``. An error becomes an error event (the SDK raises it). A client that goes
    away cancels the work."""
    task = asyncio.ensure_future(work)
    try:
        yield KEEPALIVE
        while True:
            done, _ = await asyncio.wait({task}, timeout=keepalive)
            if done:
                break
            yield KEEPALIVE
        try:
            result = task.result()
        except Exception as exc:
            yield error_event(exc)
            return
        for chunk in emit(result):
            yield sse(chunk)
        yield DONE
    finally:
        if not task.done():
            task.cancel()
