"""A minimal GitHub REST stand-in on loopback for ``bench.github_webhooks``: just the
calls the hub makes while mirroring and taking answers (issues, comments, reactions,
collaborator permission), each answered in well under a millisecond."""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from typing import Any

import uvicorn

STEERS = "maintainer"
POISON = "poison"  # whose permission lookup always fails (502): a delivery that cannot pass


class FakeGitHub:
    def __init__(self) -> None:
        self._ids = itertools.count(5_000_000_001)
        self._numbers = itertools.count(1)
        self.calls = 0
        config = uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning",
                                lifespan="off", interface="asgi3")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self.url = ""

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        while (await receive()).get("more_body") is not False:
            pass
        self.calls += 1
        status, body = self.route(scope["method"], scope["path"])
        payload = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": payload})

    def route(self, method: str, path: str) -> tuple[int, Any]:
        if m := re.fullmatch(r"/repos/([^/]+/[^/]+)/collaborators/([^/]+)/permission", path):
            if m.group(2) == STEERS:
                return 200, {"permission": "write", "role_name": "write"}
            if m.group(2) == POISON:
                return 502, {"message": "Server Error"}
            return 404, {"message": "Not Found"}
        if m := re.fullmatch(r"/repos/([^/]+/[^/]+)/issues", path):
            if method == "GET":
                return 200, []
            number = next(self._numbers)
            return 201, {"id": next(self._ids), "number": number, "state": "open",
                         "html_url": f"https://github.com/{m.group(1)}/issues/{number}"}
        if method == "POST" and path.endswith("/comments"):
            return 201, {"id": next(self._ids), "body": ""}
        if method == "GET" and path.endswith("/comments"):
            return 200, []
        if method == "POST" and path.endswith("/reactions"):
            return 201, {"id": 1, "content": "+1"}
        if method in ("PATCH", "PUT") or path.endswith("/sub_issues"):
            return 200, {}
        return 404, {"message": "Not Found"}

    def __enter__(self) -> FakeGitHub:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the fake GitHub did not start")
            time.sleep(0.01)
        self.url = f"http://127.0.0.1:{self._server.servers[0].sockets[0].getsockname()[1]}"
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(10)
