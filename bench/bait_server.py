"""A loopback HTTP server that serves a JSON Schema and records every request, so a test or
a bench can prove the hub fetched nothing a caller's ``$ref`` pointed at."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SCHEMA = json.dumps({"type": "string"}).encode()


class BaitServer:
    """``with BaitServer() as bait:`` ... ``bait.url("/x.json")``, then ``bait.requests``."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # a fetch of the schema
                owner.requests.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "application/schema+json")
                self.send_header("Content-Length", str(len(SCHEMA)))
                self.end_headers()
                self.wfile.write(SCHEMA)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, path: str = "/schema.json") -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    def __enter__(self) -> BaitServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
