"""The write path, side by side: server CPU per request of a native ask
(``POST /api/v1/tickets``), a native answer (``POST /api/v1/tickets/{id}/answer``) and an
Agent Protocol task create (``POST /ap/v1/agent/tasks``, the anchor), in one run on one
hub.

Against a real ``tickethub serve`` (SQLite, WAL): ``--wp-concurrency`` keep-alive
connections (raw HTTP/1.1 client, ``bench/rawhttp.py``) send one kind of request back to
back for ``--wp-seconds``; the three kinds take turns, ``--wp-rounds`` rounds, so drift
in the machine's speed falls on all alike. Asks and AP creates are made by an agent
token; answers by a responder token, to tickets the ask phases opened (each answered
once). Every acknowledged request was committed first. Server CPU per request is the
server process's user+system time over the timed requests.

Goals (issue 15): an ask costs at most 1.25x the CPU of an AP create, an answer at most
1.5x.

Where it stands (2 cores, 2026-11-24): group commit took the write itself to a small
share (an ask 3.86 -> 1.14 ms, an answer 4.51 -> 1.36 ms; AP create 0.5-0.7 ms). What
is left is FastAPI's per-request layers (routing, dependency solving, middleware): with
the same ask and answer served straight from ASGI, as the AP door's operations are, they
measured 0.82x and 1.18x of an AP create in this bench. Since the ask and the answer
became direct routes (``api/direct_routes.py``; same bytes as the routes): ask 1.04x,
answer 1.26x (0.61 and 0.74 ms against 0.59 ms, 2 turns of 3 s, machine under load).
"""

from __future__ import annotations

import argparse
from typing import Any

from bench.hub import HubProcess
from bench.load import Phase, load
from bench.rawhttp import Connection
from bench.report import Goal, Row, percentile
from bench.runner import main, size

NAME = "write_path"
AP = "/ap/v1/agent/tasks"
ASK = "/api/v1/tickets"
ASK_BODY = {"title": "Deploy to production?", "body": "The release is tagged; shall I ship?",
            "labels": ["deploy"]}
AP_BODY = {"input": "Write the word 'Washington' to a .txt file",
           "additional_input": {"app_id": "bench"}}
ANSWER_BODY = {"text": "Yes, ship it."}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(NAME)
    group.add_argument("--wp-seconds", type=float,
                       help="length of each timed phase [4; quick 1].")
    group.add_argument("--wp-concurrency", type=int, help="parallel connections [32].")
    group.add_argument("--wp-rounds", type=int, help="turns each kind takes [3; quick 1].")


async def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    seconds = size(args, "wp_seconds", 4.0, 1.0)
    concurrency = size(args, "wp_concurrency", 32, 32)
    rounds = size(args, "wp_rounds", 3, 1)
    ap, ask, answer = Phase(), Phase(), Phase()
    open_ids: list[int] = []

    def next_answer() -> tuple[str, str, Any] | None:
        if not open_ids:
            return None
        return "POST", f"{ASK}/{open_ids.pop()}/answer", ANSWER_BODY

    with HubProcess(start_timeout=300) as hub:  # a loaded machine starts slowly
        for token in (hub.agent_token, hub.responder_token):  # each token checked once
            conn = await Connection.open(hub.host, hub.port, token)
            await conn.request("GET", "/api/v1/tickets?limit=1")
            await conn.close()
        for _ in range(rounds):
            await load(hub, hub.agent_token, concurrency, seconds,
                        lambda: ("POST", AP, AP_BODY), 200, ap)
            await load(hub, hub.agent_token, concurrency, seconds,
                        lambda: ("POST", ASK, ASK_BODY), 201, ask,
                        lambda body: open_ids.append(int(body["id"])))
            await load(hub, hub.responder_token, concurrency, seconds, next_answer, 200,
                        answer)
    note = f"{concurrency} connections, {rounds} turns of {seconds:g} s each"
    rows = [
        Row(NAME, "AP task create: server CPU per request", ap.cpu_ms, "ms", None,
            None, None, note=f"{ap.rps:,.0f} req/s; {note}"),
        Row(NAME, "ask: server CPU per request", ask.cpu_ms, "ms", Goal("<=", 1.25 * ap.cpu_ms),
            "AP task create CPU", ap.cpu_ms, note=f"{ask.rps:,.0f} req/s"),
        Row(NAME, "answer: server CPU per request", answer.cpu_ms, "ms",
            Goal("<=", 1.5 * ap.cpu_ms), "AP task create CPU", ap.cpu_ms,
            note=f"{answer.rps:,.0f} req/s"),
        Row(NAME, "ask latency p50", percentile(ask.latencies, 50), "ms", None,
            "AP create p50", percentile(ap.latencies, 50)),
        Row(NAME, "answer latency p50", percentile(answer.latencies, 50), "ms", None,
            "AP create p50", percentile(ap.latencies, 50)),
    ]
    params = {"seconds": seconds, "concurrency": concurrency, "rounds": rounds, **{
        name: {"per_s": p.rps, "server_cpu_ms": p.cpu_ms, "count": p.count,
               "p50_ms": percentile(p.latencies, 50), "p99_ms": percentile(p.latencies, 99)}
        for name, p in (("ap_create", ap), ("ask", ask), ("answer", answer))}}
    return rows, params


if __name__ == "__main__":
    import sys

    main(sys.modules[__name__])
