"""uvicorn's HTTP/1.1 protocol (httptools), with each response written to the socket in
one piece.

uvicorn writes a response's status line and headers with one ``transport.write`` and its
body with another, so every response costs two ``send`` system calls. On loopback a
``send`` runs the receiver's side of TCP too, on the sender's CPU, holding the GIL: about
10 µs each in the 5,000-waiter answer round (``bench/concurrent_waiters``; timed
directly, 5-8% of the round's CPU with one write per response).
:class:`OneWritePerResponse` holds a header block until the next write (the body, which
the app sends in the same step) and writes both together; a header block with nothing
after it in this loop iteration (a stream that has no event yet, ``100 Continue``) is
written at the end of the iteration, so nothing waits longer than that. (Holding every
write of an iteration and sending them all at its end, so the client wakes once per
batch, was measured and is slower: the answering clients get their responses later and
send their next answers later, 1.88-2.04 s against 1.53-1.77 s for the round.)
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

_STATUS_LINE_START = b"HTTP/"
_HEADERS_END = b"\r\n\r\n"


class OneWritePerResponse:
    """A transport that holds a response's header block (a write that starts with
    ``HTTP/`` and ends with the blank line) until the write after it, and sends the two
    with one ``writelines`` (one vectored ``send``, no copy of the body). Everything else
    is the wrapped transport's: a ``close`` first writes what is held, an ``abort``
    drops it."""

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._transport.writelines((held, data))
        elif data[:5] == _STATUS_LINE_START and data[-4:] == _HEADERS_END:
            self._held = data
            self._loop.call_soon(self.flush)
        else:
            self._transport.write(data)

    def writelines(self, chunks: Any) -> None:
        self.flush()
        self._transport.writelines(chunks)

    def flush(self) -> None:
        """Write the held header block, if any (at the latest at the end of the loop
        iteration that held it)."""
        held = self._held
        if held is not None:
            self._held = None
            if not self._transport.is_closing():
                self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = None
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:  # is_closing, get_extra_info, set_protocol ...
        return getattr(self._transport, name)


class HubHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol whose request cycles write through
    :class:`OneWritePerResponse` (flow control still watches the real transport)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = OneWritePerResponse(transport, self.loop)  # type: ignore[assignment]
