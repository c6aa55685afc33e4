"""One socket write per response (``server/http_protocol.py``): the header block waits
for the body, never longer than the loop iteration, and a real uvicorn server speaks
plain HTTP/1.1 through it (keep-alive, a stream whose first event comes later)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import uvicorn

from tickethub.server.http_protocol import HubHttpProtocol, OneWritePerResponse

HEADERS = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"


class _Transport:
    """What the socket would have been asked to send, one entry per system call."""

    def __init__(self) -> None:
        self.sends: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        self.sends.append(bytes(data))

    def writelines(self, chunks: Any) -> None:
        self.sends.append(b"".join(chunks))

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def get_extra_info(self, name: str) -> str:
        return f"info:{name}"


async def test_a_header_block_and_its_body_are_one_send() -> None:
    raw = _Transport()
    corked = OneWritePerResponse(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    corked.write(HEADERS)
    assert raw.sends == []
    corked.write(b"ok")
    assert raw.sends == [HEADERS + b"ok"]
    await asyncio.sleep(0)  # the end-of-iteration flush finds nothing held
    assert raw.sends == [HEADERS + b"ok"]


async def test_a_header_block_alone_goes_out_at_the_end_of_the_iteration() -> None:
    raw = _Transport()
    corked = OneWritePerResponse(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    corked.write(HEADERS)
    await asyncio.sleep(0)
    assert raw.sends == [HEADERS]
    corked.write(b"ok")  # a later chunk is its own send
    assert raw.sends == [HEADERS, b"ok"]


async def test_other_writes_pass_close_flushes_abort_drops_the_rest_delegates() -> None:
    raw = _Transport()
    corked = OneWritePerResponse(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    corked.write(b"data: 1\n\n")  # not a header block
    assert raw.sends == [b"data: 1\n\n"]
    corked.write(HEADERS)
    corked.close()
    assert raw.sends[-1] == HEADERS and raw.closed
    assert corked.get_extra_info("peername") == "info:peername"
    other = _Transport()
    dropped = OneWritePerResponse(other, asyncio.get_running_loop())  # type: ignore[arg-type]
    dropped.write(HEADERS)
    dropped.abort()
    await asyncio.sleep(0)
    assert other.sends == [] and other.aborted


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    if scope["path"] == "/later":
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        await asyncio.sleep(0.3)
        await send({"type": "http.response.body", "body": b"data: late\n\n"})
        return
    body = scope["path"].encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _read_until(reader: asyncio.StreamReader, marker: bytes) -> bytes:
    return await asyncio.wait_for(reader.readuntil(marker), 5)


async def test_a_real_server_answers_keep_alive_requests_and_streams() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(_app, http=HubHttpProtocol, log_config=None, lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            await asyncio.sleep(0.01)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for path in (b"/one", b"/two"):  # two responses on one connection
            writer.write(b"GET " + path + b" HTTP/1.1\r\nhost: x\r\n\r\n")
            head = await _read_until(reader, b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200") and b"content-length: 4" in head
            assert await asyncio.wait_for(reader.readexactly(4), 5) == path
        writer.write(b"GET /later HTTP/1.1\r\nhost: x\r\n\r\n")
        head = await _read_until(reader, b"\r\n\r\n")  # before the first event exists
        assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
        assert not reader._buffer  # type: ignore[attr-defined]  # the event is not there yet
        assert b"data: late" in await _read_until(reader, b"\r\n\r\n")
        writer.close()
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
