"""The crash test (issue 3, "Must show"): a client waits on a ticket, the hub is killed
with SIGKILL and restarted on the same port and data; the ticket is answered and the
client's wait returns the answer; 1,000 asks made before the crash are all still there.
An event stream open across the crash resumes with Last-Event-ID: it gets every event
of the ticket, including one made while it was reconnecting, exactly once.

The hub runs as ``tickethub serve`` with SQLite in its data folder, the default set-up.
The 1,000 asks go through ``AsyncHub``, 16 at a time; the waiting client is a sync ``Hub``
with default settings, so this also shows that the defaults ride out a restart."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.waiting import eventually_blocking
from tickethub.sdk import AsyncHub, Hub
from tickethub.sdk.testing import HubProcess

pytestmark = pytest.mark.slow

ADMIN_TOKEN = "th_admin_crash_" + "c" * 34
ASKS = 1000


def waiters(hub: Hub) -> int:
    return int(hub.health()["waiters"])


async def ask_many(url: str, token: str, count: int) -> list[int]:
    async with AsyncHub(url, token) as hub:
        gate = asyncio.Semaphore(16)

        async def one(i: int) -> int:
            async with gate:
                return (await hub.ask(f"ask {i}", labels=["before-crash"])).id

        return await asyncio.gather(*(one(i) for i in range(count)))


def test_wait_survives_kill_9_and_every_ask_survives(tmp_path: Path) -> None:
    process = HubProcess(tmp_path / "hub", admin_token=ADMIN_TOKEN)
    process.start()
    try:
        with Hub(process.url, ADMIN_TOKEN) as admin:
            agent_token = admin.create_token("agent", "crash-agent")
            responder_token = admin.create_token("responder", "crash-alice")
        agent = Hub(process.url, agent_token)
        probe = Hub(process.url, agent_token)  # health checks, from the test's thread
        began = time.monotonic()
        asked = asyncio.run(ask_many(process.url, agent_token, ASKS))
        asking_took = time.monotonic() - began
        target = agent.ask("Still there after the crash?")

        result: dict[str, Any] = {}
        waiter = threading.Thread(
            target=lambda: result.update(ticket=target.wait(timeout=120)), daemon=True)
        waiter.start()
        eventually_blocking(lambda: waiters(probe) >= 1, "the client's long-poll to be held",
                            seconds=10)

        watcher_hub = Hub(process.url, agent_token)
        stream = watcher_hub.stream_events(ticket_id=target.id)
        seen: list[Any] = []

        def watch() -> None:
            for event in stream:
                seen.append(event)
                if event.type == "ticket.answered":
                    return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        agent.post(target.id, "before the crash")
        eventually_blocking(lambda: len(seen) == 1, "the stream to deliver the first message",
                            seconds=30)

        old_pid = process.pid
        process.kill()
        time.sleep(0.5)
        assert waiter.is_alive(), "the wait must not end when the hub dies"

        restarted = time.monotonic()
        process.start()
        assert process.pid != old_pid
        started_in = time.monotonic() - restarted
        up = time.monotonic()
        # The client finds the hub again by itself and holds a new long-poll.
        agent.post(target.id, "while the clients reconnect")
        eventually_blocking(lambda: waiters(probe) >= 1, "the client to resume its wait",
                            seconds=30)
        resumed_after = time.monotonic() - up

        with Hub(process.url, responder_token) as responder:
            answered_at = time.monotonic()
            responder.answer(target.id, "yes, still here", data={"ok": True})
        waiter.join(30)
        woke_after = time.monotonic() - answered_at

        assert not waiter.is_alive(), "the wait did not return after the answer"
        ticket = result["ticket"]
        assert ticket.id == target.id and ticket.outcome == "answered"
        assert ticket.answer.text == "yes, still here" and ticket.answer.data == {"ok": True}
        assert ticket.answer.by == "crash-alice"

        watcher.join(30)
        assert not watcher.is_alive(), "the event stream did not resume after the restart"
        assert [e.type for e in seen] == ["message.posted", "message.posted", "ticket.answered"]
        assert [e.seq for e in seen] == sorted({e.seq for e in seen})  # in order, no repeats
        stream.close()
        watcher_hub.close()

        survived = [t for t in agent.list(label="before-crash", limit=200)]
        assert len(set(asked)) == ASKS
        assert sorted(t.id for t in survived) == sorted(asked)
        assert {t.title for t in survived} == {f"ask {i}" for i in range(ASKS)}
        assert all(t.status == "open" for t in survived)
        agent.close()
        probe.close()
        print(f"\ncrash test: {ASKS} asks in {asking_took:.1f}s; "
              f"restart took {started_in:.1f}s; the client resumed {resumed_after:.2f}s "
              f"after the hub was up and woke {woke_after * 1000:.0f} ms after the answer")
    finally:
        process.stop()
