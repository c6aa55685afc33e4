"""The HTTP floor of an answer round: what the same round costs a server that does
nothing but HTTP.

``bench/concurrent_waiters``' answer round parks thousands of long-polls, then answers
every one over a few connections. Besides the hub's own work (the token, validation, the
write transaction, the rendering), each answer costs HTTP: one request parsed and two
responses sent (the answer's and its waiter's), on the same uvicorn protocol, event loop
and loopback sockets the hub uses. This module is a server with only that part: ``GET
/wait/{key}`` parks until ``POST /answer/{key}`` arrives, and both return a body of the
size the hub's did. Run in the same bench run, on the same machine, it is the anchor that
tells how much of a round any HTTP server in Python would take there, whatever the hub
did: the rest is the hub's.

Run as a program it serves (``python -m bench.http_floor PORT BODY_BYTES``); ``floor_round``
starts it and measures one round.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.hub import stop_process
from bench.rawhttp import Connection
from tickethub.sdk.testing import free_port

_SERVE_TIMEOUT = 60.0


def _app(body: bytes) -> Any:
    """The ASGI app: parked futures by key, one fixed JSON body for every response."""
    parked: dict[str, asyncio.Future[None]] = {}
    start = {"type": "http.response.start", "status": 200,
             "headers": [(b"content-type", b"application/json"),
                         (b"content-length", str(len(body)).encode())]}
    done = {"type": "http.response.body", "body": body}

    def future(key: str) -> asyncio.Future[None]:
        found = parked.get(key)
        if found is None:
            found = parked[key] = asyncio.get_running_loop().create_future()
        return found

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        path: str = scope["path"]
        if path.startswith("/wait/"):
            await future(path[6:])
        elif path.startswith("/answer/"):
            while (await receive()).get("more_body"):
                pass
            waiting = future(path[8:])
            if not waiting.done():
                waiting.set_result(None)
        elif path == "/parked":
            count = str(sum(1 for f in parked.values() if not f.done())).encode()
            await send({**start, "headers": [(b"content-length", str(len(count)).encode())]})
            await send({"type": "http.response.body", "body": count})
            return
        await send(start)
        await send(done)

    return app


def serve(port: int, body_bytes: int) -> None:
    """Serve the floor app on ``127.0.0.1:port`` as the hub serves (``serve`` in
    ``server/main.py``): uvicorn, uvloop, httptools through the hub's protocol class,
    no access log."""
    import uvicorn

    from tickethub.server.main import _http_protocol

    body = b'{"pad":"' + b"x" * max(0, body_bytes - 10) + b'"}'
    uvicorn.run(_app(body), host="127.0.0.1", port=port, http=_http_protocol(),
                loop="uvloop", access_log=False, log_level="warning", log_config=None,
                timeout_keep_alive=75, backlog=8192)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def floor_round(count: int, answerers: int, body_bytes: int) -> dict[str, float]:
    """One round on a fresh floor server: ``count`` parked long-polls, answered over
    ``answerers`` connections as the hub's round is; the seconds from the first answer
    sent to the last waiter holding its response, and the server's CPU seconds."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "bench.http_floor", str(port),
                               str(body_bytes)], env={**os.environ})
    try:
        probe = await _connect(port, server)
        gate = asyncio.Semaphore(200)  # connects in flight, as the hub's round

        async def connect() -> Connection:
            async with gate:
                return await Connection.open("127.0.0.1", port)

        waiters = await asyncio.gather(*(connect() for _ in range(count)))
        for key, conn in enumerate(waiters):
            conn.send("GET", f"/wait/{key}")
        woken = [asyncio.create_task(conn.receive()) for conn in waiters]
        while int((await probe.request("GET", "/parked")).body) < count:
            await asyncio.sleep(0.2)
        await asyncio.sleep(1)  # quiet, as the hub's round starts
        conns = [await Connection.open("127.0.0.1", port) for _ in range(answerers)]
        keys = list(range(count - 1, -1, -1))

        async def answer(conn: Connection) -> None:
            while keys:
                r = await conn.request("POST", f"/answer/{keys.pop()}", {"text": "go"})
                if r.status != 200:
                    raise RuntimeError(f"the floor server answered {r.status}")

        cpu = _cpu_seconds(server.pid)
        started = time.perf_counter()
        await asyncio.gather(*(answer(c) for c in conns))
        await asyncio.gather(*woken)
        total = time.perf_counter() - started
        cpu = _cpu_seconds(server.pid) - cpu
        await asyncio.gather(*(c.close() for c in [*conns, *waiters, probe]))
        return {"total": total, "cpu": cpu}
    finally:
        stop_process(server)


async def _connect(port: int, server: subprocess.Popen[bytes]) -> Connection:
    deadline = time.monotonic() + _SERVE_TIMEOUT
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"the floor server exited with {server.returncode}")
        try:
            return await Connection.open("127.0.0.1", port)
        except OSError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]))
