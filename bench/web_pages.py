"""Web pages: server time for the inbox and triage view with 10,000 and 100,000 tickets
and a 500-message ticket page.

In-process (no network): an ASGI wrapper times each request from the app being called
to its last response byte, so the numbers are the server's own time. For each size in
``--tickets`` the hub runs on SQLite in a new temporary folder, seeded with that many
tickets (a third of them resolved, a quarter assigned to the signed-in person, every fifth
with a due date, labels on some) and one ticket with ``--messages`` messages (Markdown, a
tenth untrusted). Every inbox and triage page counts its views exactly (no "1000+").
Goal (issues 8 and 17): inbox p50 <= 50 ms, at 100,000 tickets too, "most urgent first"
included (it reads one index-ordered scan per waiting status, store/inbox_queries.py).
Anchor: the API's ``GET /api/v1/tickets?limit=50`` in the same run, on the same data.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import update

from bench.report import Goal, Row, percentile
from bench.runner import main, size
from tickethub.api.app import create_app
from tickethub.domain.actors import Actor, Role
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings
from tickethub.store.tables import tickets
from tickethub.web.markdown import _render as markdown_cache

NAME = "web_pages"
ADMIN = "th_admin_" + "b" * 40
PASSWORD = "bench password"
WARMUP = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(NAME)
    group.add_argument("--tickets", type=_sizes,
                       help="tickets in the inbox, comma-separated sizes "
                            "[10000,100000; quick 2000].")
    group.add_argument("--messages", type=int, help="messages on one ticket [500; quick 100].")
    group.add_argument("--runs", type=int, help="requests per page [200; quick 30].")


def _sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def _short(count: int) -> str:
    return f"{count // 1000}k" if count % 1000 == 0 and count >= 1000 else str(count)


class ServerTimer:
    """ASGI middleware keeping the duration of the last HTTP request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.last = 0.0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        await self.app(scope, receive, send)
        self.last = time.perf_counter() - start


def seed(hub: HubRuntime, count: int, messages: int) -> int:
    """Fill the hub; returns the id of the ticket with the long thread."""
    agent = Actor("agent-bench", Role.AGENT)
    now = hub.clock.now()
    resolved = []
    with hub.store.write() as uow:
        uow.actors.add(agent, now)
        for n in range(count):
            kind = (Kind.QUESTION, Kind.APPROVAL, Kind.TASK)[n % 3]
            draft = TicketDraft(
                kind=kind, title=f"Ticket {n}: invoice {n * 7 % 1000} for customer {n % 97}",
                body=f"Please check **invoice {n}** before the end of the day.",
                assignee=("bench", "sam", None, None)[n % 4],
                labels=("billing",) if n % 7 == 0 else (),
                due_at=now + timedelta(minutes=5 + n % 300) if n % 5 == 0 else None,
                proposal={"tool": "refund", "arguments": {"amount": n % 100}}
                if kind is Kind.APPROVAL else None,
            )
            ticket = uow.tickets.add(draft, agent.name, now)
            if n % 3 == 2:
                resolved.append(ticket.id)
        uow.connection.execute(update(tickets).where(tickets.c.id.in_(resolved))
                               .values(status="done"))
    thread, _ = hub.tickets.ask(agent, TicketDraft(Kind.QUESTION, "A long conversation",
                                                   body="Where do we stand?"))
    # An agent outside the thread that reads everything (``read:all``): its messages are
    # kept but untrusted.
    outsider = Actor("outsider", Role.AGENT, scopes=frozenset({"read:all"}))
    for n in range(messages):
        who = outsider if n % 10 == 9 else agent
        hub.tickets.post_message(who, thread.id, f"Update {n}: *step* `{n}` done, see "
                                 f"[log](https://example.org/{n}).\n\n- a\n- b", "email")
    return thread.id


async def timed(client: httpx.AsyncClient, timer: ServerTimer, url: str, runs: int,
                cold: bool = False, **kw: Any) -> list[float]:
    out = []
    for n in range(WARMUP + runs):
        if cold:
            markdown_cache.cache_clear()
        response = await client.get(url, **kw)
        assert response.status_code == 200, (url, response.status_code, response.text[:300])
        if n >= WARMUP:
            out.append(timer.last * 1000)
    return out


async def _measure(count: int, messages: int, runs: int, thread_page: bool
                   ) -> tuple[list[float], dict[str, list[float]]]:
    with tempfile.TemporaryDirectory() as folder:
        hub = HubRuntime(Settings(data_dir=Path(folder), admin_token=ADMIN))
        hub.sessions.set_password("bench", PASSWORD)
        thread_id = seed(hub, count, messages if thread_page else 1)
        timer = ServerTimer(create_app(hub))
        async with hub.running():
            transport = httpx.ASGITransport(app=timer)
            async with httpx.AsyncClient(transport=transport, base_url="http://hub") as c:
                form = await c.get("/login")
                csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
                assert csrf
                signed = await c.post("/login", data={"csrf": csrf.group(1),
                                                      "username": "bench",
                                                      "password": PASSWORD})
                assert signed.status_code == 303
                anchor = await timed(c, timer, "/api/v1/tickets?limit=50", runs,
                                     headers={"Authorization": f"Bearer {ADMIN}"})
                pages = {
                    "inbox (waiting on my team, newest)": "/",
                    "inbox, most urgent first": "/?sort=urgent",
                    "inbox, search 'customer 42'": "/?q=customer+42",
                    "inbox, all, page near the end": f"/?view=all&cursor={count // 50}",
                    "triage (list, counts per view, pane)": "/triage",
                    "triage, most urgent first": "/triage?sort=urgent",
                    "triage pane alone": f"/triage/pane/{count // 2}",
                }
                if thread_page:
                    pages[f"ticket page, {messages}-message thread"] = f"/t/{thread_id}"
                measured = {name: await timed(c, timer, url, runs)
                            for name, url in pages.items()}
                if thread_page:
                    cold = (f"ticket page, {messages}-message thread, first view "
                            "(cold Markdown)")
                    measured[cold] = await timed(c, timer, f"/t/{thread_id}",
                                                 max(5, runs // 10), cold=True)
        hub.close()
    return anchor, measured


async def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    counts = size(args, "tickets", [10_000, 100_000], [2_000])
    messages = size(args, "messages", 500, 100)
    runs = size(args, "runs", 200, 30)
    rows = []
    for n, count in enumerate(counts):
        anchor, measured = await _measure(count, messages, runs, thread_page=n == 0)
        at = f" @{_short(count)}"
        anchor_name = f"GET /api/v1/tickets?limit=50{at}"
        anchor_p50 = percentile(anchor, 50)
        rows.append(Row(NAME, f"{anchor_name} p50 (anchor)", anchor_p50, "ms"))
        for name, values in measured.items():
            goal = Goal("<=", 50) if name.startswith(("inbox (", "inbox, most urgent",
                                                       "triage, most urgent")) else None
            label = name if name.startswith("ticket page") else name + at
            rows.append(Row(NAME, f"{label} p50", percentile(values, 50), "ms", goal,
                            anchor_name, anchor_p50))
            rows.append(Row(NAME, f"{label} p95", percentile(values, 95), "ms", None,
                            anchor_name, percentile(anchor, 95)))
    return rows, {"tickets": counts, "messages": messages, "runs": runs}


if __name__ == "__main__":
    import sys

    main(sys.modules[__name__])
