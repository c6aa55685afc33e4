"""Serve a ``FakeGitHub`` over real HTTP on loopback (for the CLI, which builds its own
githubkit client from TICKETHUB_GITHUB_API_URL)."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import uvicorn
from gh_fake import FakeGitHub


class FakeGitHubServer:
    def __init__(self, fake: FakeGitHub) -> None:
        self.fake = fake
        config = uvicorn.Config(self._app, host="127.0.0.1", port=0, log_level="warning",
                                lifespan="off", interface="asgi3")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self.url = ""

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        query = scope["query_string"].decode()
        url = f"http://fake{scope['path']}" + (f"?{query}" if query else "")
        request = httpx.Request(scope["method"], url, content=body, headers=[
            (k.decode(), v.decode()) for k, v in scope["headers"]])
        response = self.fake.handler(request)
        await send({"type": "http.response.start", "status": response.status_code,
                    "headers": [(k.encode(), v.encode()) for k, v in response.headers.items()
                                if k.lower() not in ("content-length",)]})
        await send({"type": "http.response.body", "body": response.content})

    def __enter__(self) -> FakeGitHubServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the fake GitHub server did not start")
            time.sleep(0.01)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(10)
