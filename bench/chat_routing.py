"""Chat routing: messages per second through the conversation engine, and per-message
latency from receipt to the bot's reply.

A real engine on a fresh SQLite database (the default store) with one open conversation
whose handler answers every message (``echo``). Each message is queued in the inbox,
routed, handled, committed with the thread's compare-and-set, written to the ticket's
audit trail and answered. ``--messages`` go into ONE thread (the flood case: handled in
order, nothing lost — checked, the bench fails otherwise).

Latency is measured through ``conversations.pump`` with an in-memory transport: from the
moment the transport yields a received message to the moment ``send`` is called with the
reply.

Webhook latency: a whole hub (``HubRuntime`` with Slack on, SQLite) behind its ASGI app;
each message is a signed Events API ``POST /hooks/slack`` in one thread, timed from
sending the POST to the bot's ``chat.postMessage`` arriving at a loopback stand-in
(``bench.chat_standin``): signature check, queue, engine, the HTTP reply — the engine's
part is the pump row above.

Anchor: one ``TicketService.post_message`` on the same database — a single audited ticket
write, the floor of anything that records a chat message on a ticket.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench.report import Row, percentile
from bench.runner import main, size
from tickethub.conversations.engine import ConversationEngine
from tickethub.conversations.handlers import Step, Trigger, Turn, command
from tickethub.conversations.model import ChatMessage, Reply
from tickethub.conversations.pump import run_conversations
from tickethub.domain.actors import Actor, Role
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.server.system import SystemClock
from tickethub.services.tickets import TicketService
from tickethub.store.chat_store import SqlChatState
from tickethub.store.engine import make_engine
from tickethub.store.migrate import upgrade
from tickethub.store.sql_store import SqlStore
from tickethub.testing import RecordingNotifier

NAME = "chat_routing"


class Echo:
    name = "echo"
    triggers: tuple[Trigger, ...] = (command("echo"),)
    timeout: timedelta | None = None

    def start(self, turn: Turn) -> Step:
        return Step(say=["go"], state={"n": 0, "last": -1})

    def advance(self, turn: Turn, state: dict[str, Any]) -> Step:
        n = int(turn.text)
        if n != state["last"] + 1:
            raise AssertionError(f"out of order: {n} after {state['last']}")
        return Step(say=[turn.text], state={"n": state["n"] + 1, "last": n})

    def help(self, state: dict[str, Any]) -> str:
        return "numbers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(NAME)
    group.add_argument("--messages", type=int, help="messages into one thread [1000; "
                       "quick 200].")


def _engine(folder: Path) -> tuple[ConversationEngine, TicketService, SqlChatState]:
    sql = make_engine(f"sqlite:///{folder / 'hub.db'}")
    upgrade(sql)
    store = SqlStore(sql)
    tickets = TicketService(store, SystemClock(), RecordingNotifier())
    state = SqlChatState(store)
    return ConversationEngine(state, tickets, SystemClock(), [Echo()]), tickets, state


def _msg(n: int) -> ChatMessage:
    return ChatMessage("bench", "!room", f"$m{n}", "alice", str(n), thread_root="$root")


class QueueTransport:
    """An in-memory platform: messages in through a queue, replies timestamped."""

    name = "bench"

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[ChatMessage] = asyncio.Queue()
        self.received: dict[str, float] = {}
        self.latencies: list[float] = []

    async def connect(self) -> None:
        return None

    async def messages(self) -> AsyncIterator[ChatMessage]:
        while True:
            msg = await self.inbox.get()
            self.received[msg.body] = time.perf_counter()
            yield msg

    async def send(self, reply: Reply) -> str:
        started = self.received.pop(reply.text, None)
        if started is not None:
            self.latencies.append(time.perf_counter() - started)
        return f"$bot{len(self.latencies)}"


def _anchor(tickets: TicketService, count: int) -> float:
    actor = Actor("anchor", Role.AGENT)
    ticket, _ = tickets.ask(actor, TicketDraft(kind=Kind.TASK, title="anchor"))
    started = time.perf_counter()
    for n in range(count):
        tickets.post_message(actor, ticket.id, str(n), "bench")
    return count / (time.perf_counter() - started)


async def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    count = size(args, "messages", 1000, 200)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        engine, tickets, state = _engine(folder)
        engine.receive(ChatMessage("bench", "!room", "$root", "alice", "@bot echo"))
        anchor_rate = await asyncio.to_thread(_anchor, tickets, count)

        started = time.perf_counter()
        for n in range(count):
            engine.receive(_msg(n))
        rate = count / (time.perf_counter() - started)
        conv = state.by_ticket(1)
        assert conv is not None and conv.state["h"]["n"] == count, "messages were lost"

        # latency through the pump, in a second thread of the same engine
        engine.receive(ChatMessage("bench", "!room", "$root2", "alice", "@bot echo"))
        transport = QueueTransport()
        pump = asyncio.create_task(run_conversations(engine, transport, expire_every=60))
        for n in range(count // 2):
            await transport.inbox.put(ChatMessage("bench", "!room", f"$l{n}", "alice",
                                                  str(n), thread_root="$root2"))
            while transport.received or not transport.inbox.empty():  # one at a time
                await asyncio.sleep(0.0005)
        pump.cancel()
        await asyncio.gather(pump, return_exceptions=True)
    lat = [x * 1000 for x in transport.latencies]
    hook = [x * 1000 for x in await _webhook_latencies(max(count // 10, 20))]
    rows = [
        Row(NAME, f"messages routed into one thread ({count}, in order, none lost)", rate,
            "msg/s", None, "ticket message writes/s", anchor_rate),
        Row(NAME, "receipt → reply p50", percentile(lat, 50), "ms", None),
        Row(NAME, "receipt → reply p99", percentile(lat, 99), "ms", None),
        Row(NAME, "Slack webhook POST → reply at the API p50", percentile(hook, 50), "ms",
            None, "pump receipt → reply p50", percentile(lat, 50)),
        Row(NAME, "Slack webhook POST → reply at the API p99", percentile(hook, 99), "ms",
            None),
    ]
    return rows, {"messages": count, "latency_samples": len(lat),
                  "webhook_samples": len(hook)}


async def _webhook_latencies(count: int) -> list[float]:
    """``count`` messages through ``POST /hooks/slack`` into one conversation, one at a
    time; seconds from each POST to its reply reaching the stand-in."""
    import httpx

    from bench.chat_standin import StandIn
    from tickethub.api.app import create_app
    from tickethub.channels.chat_hooks.slack import signature
    from tickethub.server.runtime import HubRuntime
    from tickethub.settings import Settings

    secret = "bench-signing-secret"
    standin = StandIn()
    with tempfile.TemporaryDirectory() as tmp:
        hub = HubRuntime(Settings(data_dir=Path(tmp), slack_signing_secret=secret,
                                  slack_bot_token="xoxb-bench",
                                  slack_api_url=standin.url,
                                  chat_plugins=["bench.chat_routing:handlers"]))
        try:
            async with hub.running(), httpx.AsyncClient(
                    transport=httpx.ASGITransport(app=create_app(hub)),
                    base_url="http://hub") as client:

                async def say(n: int, text: str, ts: str, root: str | None) -> float:
                    event: dict[str, Any] = {"type": "message", "channel": "C0BENCH",
                                             "user": "U0ALICE", "text": text, "ts": ts}
                    if root:
                        event["thread_ts"] = root
                    body = json.dumps({"type": "event_callback", "event_id": f"Ev{n}",
                                       "event": event}).encode()
                    stamp = str(int(time.time()))
                    started = time.perf_counter()
                    r = await client.post("/hooks/slack", content=body, headers={
                        "X-Slack-Request-Timestamp": stamp,
                        "X-Slack-Signature": signature(secret, stamp, body),
                        "Content-Type": "application/json"})
                    assert r.status_code == 200, r.text
                    arrived = await standin.wait_for(n + 1)
                    return arrived[n].at - started

                root = "1700000000.000001"
                await say(0, "@bot echo", root, None)
                return [await say(n + 1, str(n), f"1700000001.{n:06d}", root)
                        for n in range(count)]
        finally:
            hub.close()
            standin.close()


def handlers() -> list[Echo]:
    """The bench's ``chat_plugins`` entry."""
    return [Echo()]


if __name__ == "__main__":
    import sys

    main(sys.modules[__name__])
