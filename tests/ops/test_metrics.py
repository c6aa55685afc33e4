"""GET /metrics: off by default, behind its token, every documented series present and
moving when the thing it counts happens; labels bounded."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.api.test_tickets import ask
from tests.conftest import ADMIN_TOKEN, bearer
from tickethub.ops.series import github_rate_seen
from tickethub.settings import Settings

METRICS_TOKEN = "metrics-secret-for-tests"
ALLOWED_LABELS = {"status", "kind", "type", "channel", "door", "throttle", "writer", "le"}


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url=database_url,
                    admin_token=ADMIN_TOKEN, delivery_poll_seconds=0.05,
                    delivery_backoff_seconds=0.05, metrics=True,
                    metrics_token=METRICS_TOKEN, metrics_cache_seconds=0,
                    auth_throttle_address_attempts=2, auth_throttle_base_seconds=120)


async def scrape(client: httpx.AsyncClient) -> dict[tuple[str, tuple[tuple[str, str], ...]],
                                                    float]:
    response = await client.get("/metrics", headers=bearer(METRICS_TOKEN))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_metrics_are_off_by_default(tmp_path, database_url):
    from tickethub.api.app import create_app
    from tickethub.server.runtime import HubRuntime

    hub = HubRuntime(Settings(data_dir=tmp_path / "off", database_url=database_url,
                              admin_token=ADMIN_TOKEN))
    try:
        transport = httpx.ASGITransport(app=create_app(hub))
        async with httpx.AsyncClient(transport=transport, base_url="http://hub") as c:
            response = await c.get("/metrics")
        assert response.status_code == 404
    finally:
        hub.close()


async def test_a_scrape_needs_the_metrics_token(client, admin):
    assert (await client.get("/metrics")).status_code == 401
    assert (await client.get("/metrics", headers=admin)).status_code == 401  # not an API token
    assert (await client.get("/metrics", headers=bearer(METRICS_TOKEN))).status_code == 200


async def test_every_documented_series_is_there_with_bounded_labels(client):
    families = {f.name for f in text_string_to_metric_families(
        (await client.get("/metrics", headers=bearer(METRICS_TOKEN))).text)}
    documented = Path(__file__).parents[2] / "docs" / "operations.md"
    names = {line.split("`")[1] for line in documented.read_text().splitlines()
             if line.startswith("| `tickethub_")}
    assert names, "docs/operations.md lists the series"
    # prometheus_client reports counters without their _total suffix as the family name
    assert {n.removesuffix("_total") for n in names} <= families
    samples = await scrape(client)
    for (_, labels) in samples:
        assert {k for k, _ in labels} <= ALLOWED_LABELS


async def test_tickets_by_status_and_kind(client, agent, responder):
    for _ in range(2):
        await ask(client, agent)
    approval = await ask(client, agent, kind="approval", proposal={"x": 1})
    await client.post(f"/api/v1/tickets/{approval['id']}/approve", json={},
                      headers=responder)
    samples = await scrape(client)
    assert value(samples, "tickethub_tickets", status="open", kind="question") == 2
    assert value(samples, "tickethub_tickets", status="approved", kind="approval") == 1


async def test_a_wake_moves_the_latency_histogram_and_parked_waiters_are_counted(
        client, agent, responder):
    ticket = await ask(client, agent)
    before = await scrape(client)
    waiting = asyncio.create_task(
        client.get(f"/api/v1/tickets/{ticket['id']}/wait?timeout=20", headers=agent))
    while value(await scrape(client), "tickethub_parked_agents", door="wait") < 1:
        await asyncio.sleep(0.01)
    assert value(await scrape(client), "tickethub_bus_waiters") >= 1
    await client.post(f"/api/v1/tickets/{ticket['id']}/answer", json={"text": "yes"},
                      headers={**responder, "X-Tickethub-Via": "cli"})
    assert (await waiting).json()["status"] == "answered"
    after = await scrape(client)
    assert (value(after, "tickethub_wake_latency_seconds_count")
            > value(before, "tickethub_wake_latency_seconds_count"))
    assert value(after, "tickethub_parked_agents", door="wait") == 0
    assert value(after, "tickethub_answers_total", channel="cli") == 1


async def test_answers_from_an_unknown_channel_count_as_other(client, agent, responder):
    ticket = await ask(client, agent)
    await client.post(f"/api/v1/tickets/{ticket['id']}/answer", json={"text": "x"},
                      headers={**responder, "X-Tickethub-Via": "made-up-42"})
    samples = await scrape(client)
    assert value(samples, "tickethub_answers_total", channel="other") == 1
    assert not any(("channel", "made-up-42") in labels for _, labels in samples)


async def test_an_expiry_moves_its_counter(client, agent):
    before = value(await scrape(client), "tickethub_deadline_expiries_total")
    due = (datetime.now(UTC) + timedelta(seconds=0.3)).isoformat()
    ticket = await ask(client, agent, due_at=due)
    await client.get(f"/api/v1/tickets/{ticket['id']}/wait?timeout=10", headers=agent)
    samples = await scrape(client)
    assert value(samples, "tickethub_deadline_expiries_total") == before + 1
    assert value(samples, "tickethub_events_total", type="ticket.expired") == before + 1


async def test_refused_sign_ins_are_counted(client):
    for _ in range(4):
        await client.get("/api/v1/tickets", headers=bearer("th_wrong_" + "y" * 30))
    samples = await scrape(client)
    assert value(samples, "tickethub_signin_throttled_total", throttle="token_address") >= 1
    assert value(samples, "tickethub_signin_locked_keys", throttle="token_address") == 1


async def test_group_commits_are_measured(client, agent):
    before = await scrape(client)
    for _ in range(3):
        response = await client.post("/ap/v1/agent/tasks", json={"input": "hi"},
                                     headers=agent)
        assert response.status_code == 200, response.text
    after = await scrape(client)
    counts = {labels: v for (name, labels), v in after.items()
              if name == "tickethub_group_commit_batch_size_count"}
    grew = [labels for labels, v in counts.items()
            if v > before.get(("tickethub_group_commit_batch_size_count", labels), 0)]
    assert grew, counts
    assert any(name == "tickethub_group_commit_seconds_count" and v > 0
               for (name, _), v in after.items())


async def test_delivery_queue_depth_and_age_per_channel(client, admin, agent, runtime):
    response = await client.post("/api/v1/webhooks", json={
        "url": "http://127.0.0.1:9/unreachable", "events": ["ticket.created"]},
        headers=admin)
    assert response.status_code == 201, response.text
    await ask(client, agent)
    samples = await scrape(client)
    while value(samples, "tickethub_delivery_queue_depth", channel="webhook") < 1:
        await asyncio.sleep(0.02)
        samples = await scrape(client)
    assert value(samples, "tickethub_delivery_queue_oldest_seconds", channel="webhook") >= 0
    assert ("tickethub_delivery_dead", (("channel", "webhook"),)) in samples


async def test_mail_quarantine_and_github_rate_limit(client, runtime):
    from tickethub.store.mail_store import SqlMailState

    SqlMailState(runtime.store).quarantine("imap://x@y/INBOX", "1", None, "unreadable",
                                           b"garbage", datetime.now(UTC))
    github_rate_seen("4321")
    samples = await scrape(client)
    assert value(samples, "tickethub_mail_quarantined") == 1
    assert value(samples, "tickethub_mail_ingested_total") == 0
    assert value(samples, "tickethub_github_rate_limit_remaining") == 4321
