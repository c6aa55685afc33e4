"""GitHub webhooks: how many signed deliveries the hub processes per second, and how
soon a waiting agent wakes after a collaborator's ``/answer`` webhook arrives.

Against a real ``tickethub serve`` process (SQLite) whose GitHub API is a loopback stand-in
(``bench.github_fake``): tickets labelled ``github`` are mirrored as issues; the bench
then POSTs signed ``issue_comment`` deliveries (``X-Hub-Signature-256``) to
``/hooks/github`` as GitHub would.

* wake: the agent long-polls ``GET .../wait``; once parked, one delivery with
  ``/answer`` from a collaborator; latency = sending the delivery → the waiter holding its
  response (receipt, verification, the durable inbox, permission check (cached), the
  answer). Goal (issue 6): p50 <= 30 ms.
  Anchor: the hub's native wake, ``POST .../answer`` by a responder, measured the same
  way in the same run (what the GitHub path adds on top of the hub itself).
* throughput: ``--deliveries`` signed deliveries sent on 8 connections, each answering
  its own mirrored question; deliveries/s = count / (first sent → last ticket answered).
  Anchor: native ``POST .../answer`` calls on 8 connections, answered/s, same run.
* poisoned: ``--poisoned`` wakes as above, each right behind a delivery whose permission
  lookup always fails (GitHub answers 502 for that commenter), which keeps being retried
  on its own schedule meanwhile (and through the throughput runs that follow: a cost
  they share, as a hub with such deliveries would). Anchor: the plain webhook wake p50,
  same run. Before the per-delivery back-off, each such delivery held the inbox ~7 s
  (retries in place).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
import uuid
from typing import Any

import httpx

from bench.github_fake import POISON, STEERS, FakeGitHub
from bench.hub import HubProcess
from bench.report import Goal, Row, percentile
from bench.runner import main, size

NAME = "github_webhooks"
REPO = "bench-org/bench-repo"
SECRET = "bench-webhook-secret-" + "x" * 16
WARMUP = 10
CONCURRENCY = 8


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(NAME)
    group.add_argument("--wakes", type=int, help="sequential webhook wakes [300; quick 40].")
    group.add_argument("--deliveries", type=int,
                       help="deliveries for the throughput run [1000; quick 100].")
    group.add_argument("--poisoned", type=int,
                       help="wakes behind a failing delivery [40; quick 8].")


def _delivery(number: int, comment_id: int, body: str,
              login: str = STEERS) -> tuple[bytes, dict[str, str]]:
    payload = {
        "action": "created",
        "issue": {"number": number},
        "comment": {"id": comment_id, "body": body, "author_association": "COLLABORATOR",
                    "user": {"login": login, "type": "User"},
                    "issue_url": f"https://api.github.com/repos/{REPO}/issues/{number}"},
        "repository": {"full_name": REPO, "name": REPO.split("/")[1]},
        "sender": {"login": login},
    }
    raw = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(SECRET.encode(), raw, hashlib.sha256).hexdigest()
    return raw, {"Content-Type": "application/json", "X-GitHub-Event": "issue_comment",
                 "X-GitHub-Delivery": str(uuid.uuid4()), "X-Hub-Signature-256": signature}


class _Ids:
    def __init__(self) -> None:
        self.n = 7_000_000_000

    def __call__(self) -> int:
        self.n += 1
        return self.n


async def _mirrored(agent: httpx.AsyncClient, count: int, title: str,
                    labels: tuple[str, ...] = ("github",)) -> list[tuple[int, int]]:
    """``count`` new questions, each with its issue number once mirrored."""
    ids = []
    for n in range(count):
        r = await agent.post("/api/v1/tickets", json={"title": f"{title} {n}",
                                                      "labels": list(labels)})
        r.raise_for_status()
        ids.append(int(r.json()["id"]))
    found: list[tuple[int, int]] = []
    for ticket_id in ids:
        for _ in range(3000):
            ref = (await agent.get(f"/api/v1/tickets/{ticket_id}")).json()["refs"].get("github")
            if ref:
                found.append((ticket_id, int(ref.rsplit("/", 1)[1])))
                break
            await asyncio.sleep(0.01)
        else:
            raise RuntimeError(f"ticket {ticket_id} was never mirrored")
    return found


async def _until_parked(client: httpx.AsyncClient) -> None:
    for _ in range(4000):
        if (await client.get("/healthz")).json()["waiters"] >= 1:
            return
        await asyncio.sleep(0.0005)
    raise RuntimeError("the waiter never parked")


async def _wake(agent: httpx.AsyncClient, sender: httpx.AsyncClient, ticket_id: int,
                send: Any) -> float:
    async def wait() -> tuple[float, httpx.Response]:
        r = await agent.get(f"/api/v1/tickets/{ticket_id}/wait", params={"timeout": 30})
        return time.perf_counter(), r

    waiter = asyncio.create_task(wait())
    await _until_parked(sender)
    sent = time.perf_counter()
    (await send()).raise_for_status()
    woke, r = await waiter
    if r.json()["status"] != "answered":
        raise RuntimeError(f"waiter woke with {r.json()['status']}")
    return woke - sent


async def _answered(client: httpx.AsyncClient, want: int) -> None:
    for _ in range(60000):
        if await _count_answered(client) >= want:
            return
        await asyncio.sleep(0.02)
    raise RuntimeError("the deliveries were not all processed")


async def _count_answered(client: httpx.AsyncClient) -> int:
    total, cursor = 0, None
    while True:
        params: dict[str, Any] = {"status": "answered", "label": "throughput", "limit": 200}
        if cursor:
            params["cursor"] = cursor
        page = (await client.get("/api/v1/tickets", params=params)).json()
        total += len(page["items"])
        cursor = page.get("next_cursor")
        if not cursor:
            return total


async def _throughput(agent: httpx.AsyncClient, pool: list[httpx.AsyncClient],
                      targets: list[tuple[int, int]], send_one: Any) -> float:
    queue: asyncio.Queue[tuple[int, int]] = asyncio.Queue()
    for item in targets:
        queue.put_nowait(item)

    async def worker(client: httpx.AsyncClient) -> None:
        while not queue.empty():
            ticket_id, number = queue.get_nowait()
            (await send_one(client, ticket_id, number)).raise_for_status()

    started = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in pool))
    await _answered(agent, len(targets))
    return len(targets) / (time.perf_counter() - started)


async def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    wakes = size(args, "wakes", 300, 40)
    count = size(args, "deliveries", 1000, 100)
    poisoned = size(args, "poisoned", 40, 8)
    ids = _Ids()
    with FakeGitHub() as github:
        env = {"TICKETHUB_GITHUB_TOKEN": "ghp_bench", "TICKETHUB_GITHUB_API_URL": github.url,
               "TICKETHUB_GITHUB_WEBHOOK_SECRET": SECRET,
               "TICKETHUB_GITHUB_WRITE_INTERVAL_SECONDS": "0"}
        with HubProcess(env=env) as hub:
            subprocess.run([sys.executable, "-m", "tickethub.cli.main", "github", "connect",
                            REPO, "--label", "github", "--data-dir",
                            str(hub._dir / "data")],
                           check=True, capture_output=True,
                           env={k: v for k, v in {**os.environ, **env}.items()
                                if k != "TICKETHUB_DATABASE_URL"})
            auth = {"Authorization": f"Bearer {hub.agent_token}"}
            responder_auth = {"Authorization": f"Bearer {hub.responder_token}"}
            limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
            async with (
                httpx.AsyncClient(base_url=hub.url, timeout=60, limits=limits,
                                  headers=auth) as agent,
                httpx.AsyncClient(base_url=hub.url, timeout=60, limits=limits) as sender,
                httpx.AsyncClient(base_url=hub.url, timeout=60, limits=limits,
                                  headers=responder_auth) as responder,
            ):
                async def via_github(client: httpx.AsyncClient, ticket_id: int,
                                     number: int) -> httpx.Response:
                    body, headers = _delivery(number, ids(), f"/answer {ticket_id}")
                    return await client.post("/hooks/github", content=body, headers=headers)

                async def via_native(client: httpx.AsyncClient, ticket_id: int,
                                     number: int) -> httpx.Response:
                    return await client.post(f"/api/v1/tickets/{ticket_id}/answer",
                                             json={"text": str(ticket_id)},
                                             headers=responder_auth)

                targets = await _mirrored(agent, WARMUP * 2 + wakes * 2, "wake")
                gh_wake: list[float] = []
                native_wake: list[float] = []
                for n, (ticket_id, number) in enumerate(targets):
                    use_github = n % 2 == 0
                    client = sender if use_github else responder
                    send = via_github if use_github else via_native
                    latency = await _wake(agent, client, ticket_id,
                                          lambda c=client, t=ticket_id, k=number, s=send:
                                          s(c, t, k))
                    if n >= WARMUP * 2:
                        (gh_wake if use_github else native_wake).append(latency * 1000)

                targets = await _mirrored(agent, poisoned * 2, "poisoned")
                behind_poison: list[float] = []
                for (ticket_id, number), (_, stuck) in zip(targets[::2], targets[1::2],
                                                          strict=True):
                    async def poison_then_answer(t: int = ticket_id, k: int = number,
                                                 x: int = stuck) -> httpx.Response:
                        body, headers = _delivery(x, ids(), "/answer never", POISON)
                        (await sender.post("/hooks/github", content=body,
                                           headers=headers)).raise_for_status()
                        return await via_github(sender, t, k)

                    latency = await _wake(agent, sender, ticket_id, poison_then_answer)
                    behind_poison.append(latency * 1000)

                batch = await _mirrored(agent, count * 2, "throughput",
                                        ("github", "throughput"))
                pool = [httpx.AsyncClient(base_url=hub.url, timeout=60, limits=limits)
                        for _ in range(CONCURRENCY)]
                try:
                    gh_rate = await _throughput(agent, pool, batch[:count], via_github)
                    native_rate = await _throughput(agent, pool, batch[count:], via_native)
                finally:
                    for c in pool:
                        await c.aclose()
    anchor = "native /answer wake, same run"
    rows = [
        Row(NAME, "webhook -> agent wake p50", percentile(gh_wake, 50), "ms",
            Goal("<=", 30), anchor, percentile(native_wake, 50),
            note="signed issue_comment /answer from a collaborator; anchor: a responder's "
                 "POST /api/v1/tickets/{id}/answer, alternating with it on the same hub"),
        Row(NAME, "webhook -> agent wake p99", percentile(gh_wake, 99), "ms", None, anchor,
            percentile(native_wake, 99)),
        Row(NAME, "webhook wake p50, behind a failing delivery", percentile(behind_poison, 50),
            "ms", None, "webhook -> agent wake p50, same run", percentile(gh_wake, 50),
            note=f"{poisoned} wakes, each sent right after a delivery whose permission "
                 "lookup always fails (502)"),
        Row(NAME, "signed deliveries processed/s", gh_rate, "/s", None,
            "native /answer calls/s, same run", native_rate,
            note=f"{count} deliveries on {CONCURRENCY} connections, received -> answered"),
    ]
    params = {"wakes": wakes, "deliveries": count, "concurrency": CONCURRENCY,
              "github_calls": github.calls,
              "gh_wake_ms": {"p50": percentile(gh_wake, 50), "p90": percentile(gh_wake, 90),
                             "p99": percentile(gh_wake, 99), "max": max(gh_wake)},
              "native_wake_ms": {"p50": percentile(native_wake, 50),
                                 "p99": percentile(native_wake, 99)},
              "behind_poison_ms": {"p50": percentile(behind_poison, 50),
                                   "p99": percentile(behind_poison, 99),
                                   "max": max(behind_poison)}}
    return rows, params


if __name__ == "__main__":
    main(sys.modules[__name__])
