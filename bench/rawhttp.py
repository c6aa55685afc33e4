"""A minimal HTTP/1.1 keep-alive client over asyncio streams.

The concurrency benches hold thousands of connections and push thousands of requests a
second from the same two cores the server runs on, so the client must cost next to
nothing: one request at a time per connection, ``Content-Length`` bodies only (what the
hub sends for JSON), no redirects, no TLS. Tests and SDK-like clients use httpx instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Connection:
    """One keep-alive connection; ``request`` = ``send`` then ``receive``."""

    def __init__(self, host: str, port: int, token: str | None,
                 reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.host = host
        self.port = port
        self._auth = f"Authorization: Bearer {token}\r\n" if token else ""
        self._reader = reader
        self._writer = writer

    @classmethod
    async def open(cls, host: str, port: int, token: str | None = None) -> Connection:
        reader, writer = await asyncio.open_connection(host, port, limit=1 << 20)
        return cls(host, port, token, reader, writer)

    def send(self, method: str, path: str, body: Any = None) -> None:
        """Write one request; ``body`` (if not None) is sent as JSON."""
        payload = b"" if body is None else json.dumps(body).encode()
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{self._auth}"
                f"Content-Length: {len(payload)}\r\n")
        if body is not None:
            head += "Content-Type: application/json\r\n"
        self._writer.write(head.encode() + b"\r\n" + payload)

    async def receive(self) -> Response:
        """Read one response (status line, headers, ``Content-Length`` body)."""
        head = await self._reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if "content-length" not in headers:
            raise RuntimeError(f"response without Content-Length: {lines[0]!r}")
        body = await self._reader.readexactly(int(headers["content-length"]))
        return Response(status, headers, body)

    async def request(self, method: str, path: str, body: Any = None) -> Response:
        self.send(method, path, body)
        return await self.receive()

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.wait_closed()
