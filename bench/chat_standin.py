"""A local stand-in for the chat platforms' send APIs: records every message sent and
answers like the platform (Slack ``chat.postMessage``, Mattermost ``POST /api/v4/posts``,
Telegram ``sendMessage``), each sent message getting a fresh id and its arrival time
(``perf_counter``); Mattermost's ``GET /api/v4/users/me`` names the bot
(``MATTERMOST_BOT``). Used by tests/channels/chat_hooks and bench/chat_routing."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs


@dataclass(frozen=True)
class Call:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float = 0.0


class StandIn:
    MATTERMOST_BOT = "mmbot00000000000000000000a"  # the Mattermost bot's user id

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._ids = 0
        self._lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.headers.get("content-type", "").startswith("application/json"):
                    body = json.loads(raw or b"{}")
                else:
                    body = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
                answer = standin.record(Call(self.path, dict(self.headers), body,
                                             time.perf_counter()))
                data = json.dumps(answer).encode()
                self.send_response(201 if "/api/v4/" in self.path else 200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # Mattermost's users/me: who the bot is
                if not self.path.endswith("/api/v4/users/me"):
                    self.send_error(404)
                    return
                data = json.dumps({"id": standin.MATTERMOST_BOT, "username": "bot",
                                   "is_bot": True}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def record(self, call: Call) -> dict[str, Any]:
        with self._lock:
            self._ids += 1
            n = self._ids
            self.calls.append(call)
        if call.path.endswith("/chat.postMessage"):
            return {"ok": True, "channel": call.body.get("channel"),
                    "ts": f"1700000000.{n:06d}", "message": {"text": call.body.get("text")}}
        if call.path.endswith("/api/v4/posts"):
            return {"id": f"botpost{n:020d}", "user_id": self.MATTERMOST_BOT,
                    "channel_id": call.body.get("channel_id"),
                    "root_id": call.body.get("root_id", ""),
                    "message": call.body.get("message")}
        return {"ok": True, "result": {"message_id": 9000 + n,
                                       "chat": {"id": call.body.get("chat_id")},
                                       "text": call.body.get("text")}}

    async def wait_for(self, count: int, timeout: float = 20.0) -> list[Call]:
        """The first ``count`` calls, waiting (without blocking the hub's event loop)
        for them to arrive."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                if len(self.calls) >= count:
                    return list(self.calls[:count])
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {count} calls, got {self.calls}")
            await asyncio.sleep(0.02)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
