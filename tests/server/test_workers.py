"""``tickethub serve --workers N``: refused on SQLite; on PostgreSQL, N processes on one
port, and ``kill -9`` of one under load loses nothing acknowledged: its waiters
reconnect to the other and get their answers, and the dead worker is started again."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from bench.chat_standin import StandIn
from bench.hub import child_pids
from click.testing import CliRunner
from sqlalchemy import text

from tests.channels.chat_hooks.payloads.slack import ALICE, BOT_USER, signed
from tests.channels.chat_hooks.payloads.slack import SECRET as SLACK_SECRET
from tests.channels.chat_hooks.payloads.slack import event as slack_event
from tests.conftest import ADMIN_TOKEN, LIVE_TIMEOUT, bearer, require_server
from tests.server.serving import connection_to, serving_workers
from tickethub.cli.main import cli
from tickethub.sdk import Hub
from tickethub.store.engine import make_engine

AUTH = bearer(ADMIN_TOKEN)


def _refused_line(tmp_path: Path) -> str:
    """``serve --workers 2``'s one line of refusal (exit 2)."""
    result = CliRunner().invoke(cli, ["serve", "--workers", "2", "--data-dir",
                                      str(tmp_path)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert "field workers" in lines[0]
    return lines[0]


def test_more_than_one_worker_on_sqlite_is_refused_in_one_line(tmp_path: Path,
                                                               monkeypatch):
    monkeypatch.delenv("TICKETHUB_DATABASE_URL", raising=False)
    assert "needs PostgreSQL" in _refused_line(tmp_path)
    assert not (tmp_path / "tickethub.db").exists()  # refused before anything started


def test_zero_workers_is_a_bad_command_line(tmp_path: Path):
    result = CliRunner().invoke(cli, ["serve", "--workers", "0", "--data-dir",
                                      str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.strip() == (
        "error: --workers must be at least 1 (invalid_option, field workers)")


@pytest.fixture
def workers(tmp_path: Path, pg_databases: object) -> Iterator[tuple[str, str, int]]:
    """``serve --workers 2`` on a fresh database: (url, database url, parent pid)."""
    with _serving_workers(tmp_path, pg_databases, {}) as served:
        yield served


@contextlib.contextmanager
def _serving_workers(tmp_path: Path, pg_databases: object, extra_env: dict[str, str]
                     ) -> Iterator[tuple[str, str, int]]:
    """``serve --workers 2`` on a fresh database: (url, database url, supervisor pid)."""
    require_server("PostgreSQL", pg_databases is not None)
    database = pg_databases.fresh()  # type: ignore[attr-defined]
    try:
        with serving_workers(tmp_path, database, extra_env) as (url, parent):
            yield url, database, parent
    finally:
        pg_databases.drop(database)  # type: ignore[attr-defined]


@pytest.mark.timeout(900)  # two hub starts take minutes on a loaded machine
def test_kill_9_of_one_worker_under_load_loses_nothing_acknowledged(workers):
    url, database, parent = workers
    first_workers = child_pids(parent)
    assert len(first_workers) == 2
    asked, answered = [], []
    stop = threading.Event()

    def load() -> None:  # asks and answers, as fast as one client goes
        with httpx.Client(base_url=url, headers=AUTH, timeout=10) as client:
            while not stop.is_set():
                try:
                    response = client.post("/api/v1/tickets",
                                           json={"kind": "question", "title": "load"})
                    if response.status_code == 201:
                        ticket = response.json()["id"]
                        asked.append(ticket)
                        reply = client.post(f"/api/v1/tickets/{ticket}/answer",
                                            json={"text": "ok"})
                        if reply.status_code == 200:
                            answered.append(ticket)
                except httpx.TransportError:
                    time.sleep(0.05)  # cut by the kill: not acknowledged, not counted

    hubs = [Hub(url, ADMIN_TOKEN, poll_seconds=60) for _ in range(16)]
    questions = [hub.ask(f"wait {i}").id for i, hub in enumerate(hubs)]
    # Each waiter's connection is kept alive: /healthz on it says which worker it is on.
    on = [hub.health()["pid"] for hub in hubs]
    victim = Counter(on).most_common(1)[0][0]
    with ThreadPoolExecutor(len(hubs) + 4) as pool:
        waits = [pool.submit(hub.wait, q, 180) for hub, q in zip(hubs, questions,
                                                                strict=True)]
        loaders = [pool.submit(load) for _ in range(4)]
        time.sleep(3)
        os.kill(victim, signal.SIGKILL)
        time.sleep(3)
        with httpx.Client(base_url=url, headers=AUTH, timeout=LIVE_TIMEOUT) as client:
            for q in questions:  # through whichever worker takes the connection
                for _ in range(20):
                    try:
                        reply = client.post(f"/api/v1/tickets/{q}/answer",
                                            json={"text": f"answer {q}"})
                        break
                    except httpx.TransportError:
                        time.sleep(0.2)
                assert reply.status_code == 200, reply.text
        woken = [w.result(timeout=120) for w in waits]
        stop.set()
        for loader in loaders:
            loader.result(timeout=60)
    for hub in hubs:
        hub.close()
    assert victim in on and victim in first_workers
    assert [t.answer.text if t.answer else None for t in woken] == [
        f"answer {q}" for q in questions]
    assert len(asked) > 10 and len(answered) > 5
    engine = make_engine(database)
    try:
        with engine.connect() as connection:
            status = dict(connection.execute(text(
                "SELECT id, status FROM tickets WHERE id = ANY(:ids)"),
                {"ids": asked}).all())
    finally:
        engine.dispose()
    assert set(status) == set(asked)  # every 201 is there
    assert {status[i] for i in answered} == {"answered"}  # every 200 too
    deadline = time.monotonic() + 120  # and the supervisor started a new worker
    while len(child_pids(parent)) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert victim not in child_pids(parent) and len(child_pids(parent)) == 2


def test_chat_webhooks_reaching_any_worker_are_each_handled_once(
        tmp_path: Path, pg_databases: object) -> None:
    """Slack messages sent to both workers, half of them over a connection the worker
    that is not the leader took: it stores its messages and announces them, and the
    leader's pump answers every one, once."""
    standin = StandIn()
    try:
        env = {"TICKETHUB_SLACK_SIGNING_SECRET": SLACK_SECRET,
               "TICKETHUB_SLACK_BOT_TOKEN": "xoxb-test",
               "TICKETHUB_SLACK_API_URL": standin.url + "/api",
               # the leader's scan for stored messages comes too late for this test:
               # the announcements must bring them
               "TICKETHUB_CHAT_TIMEOUT_CHECK_SECONDS": "60"}
        with _serving_workers(tmp_path, pg_databases, env) as (url, _, _), \
                connection_to(url, leader=True) as leader, \
                connection_to(url, leader=False) as follower:
            roots = [f"1700000300.{n:06d}" for n in range(12)]
            for n, root in enumerate(roots):
                body = json.dumps(slack_event(ALICE, f"<@{BOT_USER}> foodselection",
                                              root)).encode()
                answered = (leader if n % 2 else follower).post(
                    "/hooks/slack", content=body, headers=signed(body))
                assert answered.status_code == 200, answered.text
            calls = asyncio.run(_replies(standin, len(roots)))
            time.sleep(1)  # a second answer to any of them would have come by now
        assert len(standin.calls) == len(roots)
        assert Counter(call.body["thread_ts"] for call in calls) == Counter(roots)
        assert all("Which dish" in call.body["text"] for call in calls)
    finally:
        standin.close()


async def _replies(standin: StandIn, n: int) -> list[Any]:
    return list(await standin.wait_for(n))
