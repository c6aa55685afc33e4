"""Approval review and form errors: server time of the review page of a big proposal and
of a submission where every field is wrong (all errors at once, in plain words).

In-process, timed by the same ASGI wrapper as ``web_pages``. One approval has a
``--fields``-key proposal with a schema giving each key limits (so every field shows a
hint and has an original to diff against). Measured: ``GET /t/{id}`` (the review form),
``POST /t/{id}/approve`` with every value out of range (422 with every error), and an
"approve with changes" diff of the two values (``domain.proposal_diff``, no HTTP).
Anchor: the ticket page of a plain question in the same hub.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.report import Row, percentile
from bench.runner import main, size
from bench.web_pages import ServerTimer
from tickethub.api.app import create_app
from tickethub.domain import proposal_diff
from tickethub.domain.actors import Actor, Role
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings

NAME = "web_review"
ADMIN = "th_admin_" + "r" * 40
PASSWORD = "bench password"
WARMUP = 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(NAME)
    group.add_argument("--fields", type=int, help="keys in the proposal [200; quick 50].")
    group.add_argument("--review-runs", type=int, help="requests per measure [100; quick 20].")


async def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    fields = size(args, "fields", 200, 50)
    runs = size(args, "review_runs", 100, 20)
    schema = {"type": "object", "properties": {
        f"k{n}": {"type": "integer", "minimum": 0, "maximum": 100} for n in range(fields)}}
    proposal = {f"k{n}": n % 100 for n in range(fields)}
    with tempfile.TemporaryDirectory() as folder:
        hub = HubRuntime(Settings(data_dir=Path(folder), admin_token=ADMIN))
        hub.sessions.set_password("bench", PASSWORD)
        agent = Actor("agent-bench", Role.AGENT)
        with hub.store.write() as uow:
            uow.actors.add(agent, hub.clock.now())
        approval, _ = hub.tickets.ask(agent, TicketDraft(
            Kind.APPROVAL, "Apply the settings?", response_schema=schema, proposal=proposal))
        question, _ = hub.tickets.ask(agent, TicketDraft(Kind.QUESTION, "Which plan?"))
        timer = ServerTimer(create_app(hub))
        async with hub.running():
            transport = httpx.ASGITransport(app=timer)
            async with httpx.AsyncClient(transport=transport, base_url="http://hub") as c:
                form = await c.get("/login")
                token = re.search(r'name="csrf" value="([^"]+)"', form.text)
                assert token
                await c.post("/login", data={"csrf": token.group(1), "username": "bench",
                                             "password": PASSWORD})
                page = await c.get(f"/t/{question.id}")
                csrf = re.search(r'<meta name="csrf" content="([^"]+)">', page.text)
                assert csrf
                wrong = {"csrf": csrf.group(1), "version": "1", "edit": "1",
                         **{f"f.k{n}": "1000" for n in range(fields)}}

                async def measure(method: str, url: str, status: int,
                                  data: dict[str, str] | None = None) -> list[float]:
                    out = []
                    for n in range(WARMUP + runs):
                        response = await c.request(method, url, data=data)
                        assert response.status_code == status, response.text[:300]
                        if n >= WARMUP:
                            out.append(timer.last * 1000)
                    return out

                anchor = await measure("GET", f"/t/{question.id}", 200)
                review_page = await measure("GET", f"/t/{approval.id}", 200)
                all_errors = await measure("POST", f"/t/{approval.id}/approve", 422, wrong)
                shown = (await c.post(f"/t/{approval.id}/approve", data=wrong)).text
                assert shown.count("must be from 0 to 100.") >= fields
        hub.close()
    edited = {k: v + 1 for k, v in proposal.items()}
    diffs = []
    for _ in range(runs):
        start = time.perf_counter()
        proposal_diff.summary(proposal_diff.diff(proposal, edited))
        diffs.append((time.perf_counter() - start) * 1000)
    anchor_name = "GET /t/{question} (plain ticket page)"
    a50 = percentile(anchor, 50)
    rows = [Row(NAME, f"{anchor_name} p50 (anchor)", a50, "ms")]
    for name, values in ((f"review page, {fields}-field proposal", review_page),
                         (f"approve with {fields} wrong fields (422, every error)",
                          all_errors),
                         (f"diff + summary of {fields} changed keys (no HTTP)", diffs)):
        rows.append(Row(NAME, f"{name} p50", percentile(values, 50), "ms", None,
                        anchor_name, a50))
    return rows, {"fields": fields, "runs": runs}


if __name__ == "__main__":
    import sys

    main(sys.modules[__name__])
