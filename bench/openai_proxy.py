"""OpenAI proxy overhead: what the hub adds in front of an upstream model endpoint.

A minimal OpenAI-compatible upstream (``bench.openai_upstream``, answers at once) and a
real ``tickethub serve`` process pointed at it (``TICKETHUB_UPSTREAM_BASE_URL``), both on
loopback. ``--requests`` non-streaming chat completions go alternately straight to the
upstream and through the hub (no approval needed), each on its own keep-alive
connection; the added latency is hub minus direct, at p50 and p99. Goal (issue 5):
added p50 <= 2 ms. Then ``--streams`` streaming requests each way measure the
time to the first content chunk. Anchor: the same upstream called directly, same run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx

from bench.hub import HubProcess, stop_process
from bench.rawhttp import Connection
from bench.report import Goal, Row, percentile
from bench.runner import main, size
from tickethub.sdk.testing import free_port

NAME = "openai_proxy"
WARMUP = 50
BODY = {"model": "bench-model", "messages": [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "ping"}]}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(NAME)
    group.add_argument("--requests", type=int,
                       help="non-streaming requests each way [2000; quick 200].")
    group.add_argument("--streams", type=int,
                       help="streaming requests each way [300; quick 50].")


@contextlib.contextmanager
def _upstream() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "bench.openai_upstream", "--port", str(port)],
                            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(url + "/v1/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
        else:
            raise RuntimeError("the upstream did not start")
        yield url
    finally:
        stop_process(proc, 10)


async def _round_trips(direct: Connection, hub: Connection, n: int
                       ) -> tuple[list[float], list[float]]:
    """Alternate direct and proxied requests so both see the same machine noise."""
    direct_times: list[float] = []
    hub_times: list[float] = []
    for i in range(n + WARMUP):
        for conn, path, out in ((direct, "/v1/chat/completions", direct_times),
                                (hub, "/v1/chat/completions", hub_times)):
            start = time.perf_counter()
            response = await conn.request("POST", path, BODY)
            elapsed = time.perf_counter() - start
            if response.status != 200:
                raise RuntimeError(f"{conn.port} answered {response.status}: "
                                   f"{response.body[:300]!r}")
            if i >= WARMUP:
                out.append(elapsed * 1000)
    return direct_times, hub_times


async def _first_chunk(client: httpx.AsyncClient, url: str) -> float:
    start = time.perf_counter()
    async with client.stream("POST", url, json={**BODY, "stream": True}) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}")
        first = None
        async for line in response.aiter_lines():
            if first is None and line.startswith("data: {") and '"content": "tok' in line:
                first = time.perf_counter() - start
        if first is None:
            raise RuntimeError("no content chunk arrived")
    return first * 1000


async def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    n = size(args, "requests", 2000, 200)
    streams = size(args, "streams", 300, 50)
    with _upstream() as upstream_url, HubProcess(env={
            "TICKETHUB_UPSTREAM_BASE_URL": upstream_url + "/v1"}) as hub:
        up_port = int(upstream_url.rsplit(":", 1)[1])
        direct = await Connection.open("127.0.0.1", up_port)
        proxied = await Connection.open("127.0.0.1", hub.port, hub.agent_token)
        try:
            direct_ms, hub_ms = await _round_trips(direct, proxied, n)
        finally:
            await direct.close()
            await proxied.close()
        headers = {"Authorization": f"Bearer {hub.agent_token}"}
        async with httpx.AsyncClient(headers=headers, timeout=30) as client:
            direct_ttfc, hub_ttfc = [], []
            for i in range(streams + 10):
                d = await _first_chunk(client, upstream_url + "/v1/chat/completions")
                h = await _first_chunk(client, hub.url + "/v1/chat/completions")
                if i >= 10:
                    direct_ttfc.append(d)
                    hub_ttfc.append(h)
    anchor = "direct to upstream"
    d50, d99 = percentile(direct_ms, 50), percentile(direct_ms, 99)
    h50, h99 = percentile(hub_ms, 50), percentile(hub_ms, 99)
    t_d50, t_h50 = percentile(direct_ttfc, 50), percentile(hub_ttfc, 50)
    t_d99, t_h99 = percentile(direct_ttfc, 99), percentile(hub_ttfc, 99)
    rows = [
        Row(NAME, "via hub p50", h50, "ms", None, anchor + " p50", d50),
        Row(NAME, "via hub p99", h99, "ms", None, anchor + " p99", d99),
        Row(NAME, "added latency p50", h50 - d50, "ms", Goal("<=", 2.0), anchor + " p50", d50,
            note=f"{n} non-streaming requests each way, alternating, keep-alive; the hub "
                 "authenticates the token, validates the request and forwards it"),
        Row(NAME, "added latency p99", h99 - d99, "ms", None, anchor + " p99", d99),
        Row(NAME, "stream first chunk p50", t_h50, "ms", None, anchor + " p50", t_d50),
        Row(NAME, "first-chunk overhead p50", t_h50 - t_d50, "ms", None, anchor + " p50",
            t_d50, note=f"{streams} streaming requests each way; time to the first "
                        "content chunk"),
        Row(NAME, "first-chunk overhead p99", t_h99 - t_d99, "ms", None, anchor + " p99",
            t_d99),
    ]
    return rows, {"requests": n, "streams": streams}


if __name__ == "__main__":
    main(sys.modules[__name__])
