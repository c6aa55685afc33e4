"""Two real ``tickethub serve`` processes on one PostgreSQL database behave as one hub:
waiters wake across them, a deadline expires once, a delivery is sent once, event
streams on one show what the other wrote, in order, and bad tokens tried on one count
on the other."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from tests.conftest import ADMIN_TOKEN, LIVE_TIMEOUT, bearer, require_server
from tests.waiting import eventually_blocking
from tickethub.sdk.testing import HubProcess
from tickethub.store.engine import make_engine

AUTH = bearer(ADMIN_TOKEN)


@pytest.fixture
def pg_url(pg_databases: object) -> Iterator[str]:
    require_server("PostgreSQL", pg_databases is not None)
    url = pg_databases.fresh()  # type: ignore[attr-defined]
    yield url
    pg_databases.drop(url)  # type: ignore[attr-defined]


@pytest.fixture
def two_hubs(tmp_path: Path, pg_url: str) -> Iterator[tuple[HubProcess, HubProcess]]:
    env = {"TICKETHUB_DELIVERY_POLL_SECONDS": "0.2",
           "TICKETHUB_DEADLINE_CHECK_MAX_SECONDS": "0.5",
           # the token throttle locks an address after 3 failures, for a minute
           "TICKETHUB_AUTH_THROTTLE_ADDRESS_ATTEMPTS": "3",
           "TICKETHUB_AUTH_THROTTLE_BASE_SECONDS": "60", "TICKETHUB_METRICS": "true",
           # a checked token is trusted a minute: only news of a revocation stops it
           "TICKETHUB_AUTH_CACHE_SECONDS": "60"}
    a = HubProcess(tmp_path / "a", admin_token=ADMIN_TOKEN, database_url=pg_url, env=env)
    b = HubProcess(tmp_path / "b", admin_token=ADMIN_TOKEN, database_url=pg_url, env=env)
    with ThreadPoolExecutor(2) as pool:  # a start takes long on a loaded machine
        list(pool.map(lambda hub: hub.start(timeout=300), (a, b)))
    try:
        yield a, b
    finally:
        a.stop()
        b.stop()


def _ask(hub: HubProcess, title: str, **extra: object) -> dict[str, object]:
    response = httpx.post(f"{hub.url}/api/v1/tickets", headers=AUTH, timeout=10,
                          json={"kind": "question", "title": title, **extra})
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def _answer(hub: HubProcess, ticket_id: object, text_: str) -> None:
    response = httpx.post(f"{hub.url}/api/v1/tickets/{ticket_id}/answer", headers=AUTH,
                          json={"text": text_}, timeout=10)
    assert response.status_code == 200, response.text


def test_a_waiter_on_one_process_wakes_on_an_answer_through_the_other(two_hubs):
    a, b = two_hubs
    ticket = _ask(a, "which region?")
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(httpx.get, f"{a.url}/api/v1/tickets/{ticket['id']}/wait",
                              params={"timeout": 30}, headers=AUTH, timeout=40)
        time.sleep(0.5)  # parked on A
        assert not waiting.done()
        _answer(b, ticket["id"], "eu-west-1")
        woken = waiting.result(timeout=20)  # far less than the 30 s hold
    assert woken.status_code == 200
    assert woken.json()["status"] == "answered"
    assert woken.json()["answer"]["text"] == "eu-west-1"


def test_a_deadline_expires_once_with_two_processes(two_hubs, pg_url):
    a, b = two_hubs
    due = (datetime.now(UTC) + timedelta(seconds=15)).isoformat()
    ids = [_ask(a if i % 2 else b, f"due {i}", due_at=due)["id"] for i in range(30)]
    # Waiters on both processes: each woken with its own ticket expired, whichever
    # process expired it (the other's through NOTIFY).
    with ThreadPoolExecutor(6) as pool:
        waiting = {i: pool.submit(httpx.get, f"{hub.url}/api/v1/tickets/{i}/wait",
                                  params={"timeout": 60}, headers=AUTH, timeout=70)
                   for hub, i in zip((a, b) * 3, ids[:6], strict=True)}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            states = {httpx.get(f"{a.url}/api/v1/tickets/{i}", headers=AUTH,
                                timeout=LIVE_TIMEOUT).json()["status"]
                      for i in ids[-1:]}
            if states == {"expired"}:
                break
            time.sleep(0.2)
        woken = {i: future.result(timeout=30) for i, future in waiting.items()}
    time.sleep(1.5)  # both loops have had their rounds after the expiry
    for i, response in woken.items():
        assert response.json()["id"] == i and response.json()["status"] == "expired"
        assert response.headers["X-Tickethub-Timed-Out"] == "false"
    engine = make_engine(pg_url)
    try:
        with engine.connect() as connection:
            expiries = Counter(connection.execute(text(
                "SELECT ticket_id FROM events WHERE type = 'ticket.expired'")).scalars())
    finally:
        engine.dispose()
    assert set(expiries) == set(ids)
    assert set(expiries.values()) == {1}


class _Receiver(ThreadingHTTPServer):
    def __init__(self) -> None:
        self.keys: list[str] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                with receiver.lock:
                    receiver.keys.append(self.headers["X-Tickethub-Delivery"])
                time.sleep(0.01)  # a real receiver takes a moment: claims overlap
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)


def test_each_delivery_is_sent_once_with_two_processes(two_hubs):
    a, b = two_hubs
    receiver = _Receiver()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
        created = httpx.post(f"{a.url}/api/v1/webhooks", headers=AUTH,
                             json={"url": url, "events": ["ticket.created"]}, timeout=LIVE_TIMEOUT)
        assert created.status_code == 201, created.text
        time.sleep(1.2)  # B's list of webhooks is up to a second old
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: _ask(a if i % 2 else b, f"hooked {i}"), range(60)))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(set(receiver.keys)) < 60:
            time.sleep(0.2)
        time.sleep(1.0)  # a second send would arrive now
    finally:
        receiver.shutdown()
    assert len(set(receiver.keys)) == 60
    repeated = [key for key, n in Counter(receiver.keys).items() if n > 1]
    assert repeated == []


def test_event_streams_on_one_process_show_the_others_writes_in_order(two_hubs):
    a, b = two_hubs
    start = httpx.get(f"{a.url}/healthz", timeout=LIVE_TIMEOUT).json()["last_seq"]
    seen: list[dict[str, object]] = []
    ready = threading.Event()

    def read_stream() -> None:
        with httpx.stream("GET", f"{a.url}/api/v1/events/stream", params={"since": start},
                          headers=AUTH, timeout=LIVE_TIMEOUT) as response:
            ready.set()
            for line in response.iter_lines():
                if line.startswith("data: "):
                    seen.append(json.loads(line[6:]))
                    if len(seen) >= 40:
                        return

    reader = threading.Thread(target=read_stream, daemon=True)
    reader.start()
    assert ready.wait(10)
    with ThreadPoolExecutor(4) as pool:  # both processes write at once
        created = list(pool.map(lambda i: _ask(b if i % 3 else a, f"streamed {i}"),
                                range(40)))
    reader.join(30)
    seqs = [e["seq"] for e in seen]
    assert seqs == sorted(seqs) and len(set(seqs)) == 40
    assert seqs == list(range(start + 1, start + 41))  # no gap: nothing skipped
    assert {e["ticket_id"] for e in seen} == {t["id"] for t in created}
    page = httpx.get(f"{a.url}/api/v1/events", params={"since": start, "limit": 100},
                     headers=AUTH, timeout=LIVE_TIMEOUT).json()
    assert [e["seq"] for e in page["items"]] == seqs  # the page says the same


def _locked_addresses(hub: HubProcess) -> float:
    """The token throttle's locked addresses, as ``/metrics`` says (no attempt made)."""
    for line in httpx.get(f"{hub.url}/metrics", timeout=LIVE_TIMEOUT).text.splitlines():
        if line.startswith('tickethub_signin_locked_keys{throttle="token_address"}'):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError("no tickethub_signin_locked_keys series")


def test_bad_tokens_tried_on_one_process_lock_the_address_on_the_other(two_hubs):
    a, b = two_hubs
    guess = {"Authorization": "Bearer th_" + "0" * 40}
    assert httpx.get(f"{b.url}/api/v1/tickets", headers=AUTH,  # B knows this token now
                     timeout=LIVE_TIMEOUT).status_code == 200
    for _ in range(3):
        assert httpx.get(f"{a.url}/api/v1/tickets", headers=guess,
                         timeout=LIVE_TIMEOUT).status_code == 401
    deadline = time.monotonic() + 20
    while _locked_addresses(b) < 1:  # B never saw a bad token itself
        assert time.monotonic() < deadline, "B never heard of A's failures"
        time.sleep(0.05)
    refused = httpx.get(f"{b.url}/api/v1/tickets", headers=guess, timeout=LIVE_TIMEOUT)
    assert refused.status_code == 429, refused.text
    assert 0 < int(refused.headers["Retry-After"]) <= 60
    # A token B has checked before still works there: the lock is for the others.
    assert httpx.get(f"{b.url}/api/v1/tickets", headers=AUTH,
                     timeout=LIVE_TIMEOUT).status_code == 200


def test_a_token_revoked_through_one_process_stops_at_once_on_the_other(two_hubs):
    a, b = two_hubs
    made = httpx.post(f"{a.url}/api/v1/tokens", headers=AUTH, timeout=LIVE_TIMEOUT,
                      json={"name": "leaver", "role": "agent"})
    assert made.status_code == 201, made.text
    theirs = bearer(made.json()["token"])
    assert httpx.get(f"{b.url}/api/v1/me", headers=theirs,  # B trusts it for a minute
                     timeout=LIVE_TIMEOUT).status_code == 200
    gone = httpx.delete(f"{a.url}/api/v1/tokens/{made.json()['id']}", headers=AUTH,
                        timeout=LIVE_TIMEOUT)
    assert gone.status_code == 204
    def refused() -> httpx.Response | None:
        r = httpx.get(f"{b.url}/api/v1/me", headers=theirs, timeout=LIVE_TIMEOUT)
        return r if r.status_code != 200 else None

    # well within the minute B would trust it
    refused_by_b = eventually_blocking(refused, "B refuses the revoked token", seconds=20)
    assert refused_by_b.status_code == 401
    assert refused_by_b.json()["code"] == "unauthenticated"
