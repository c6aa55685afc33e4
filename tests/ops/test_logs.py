"""Structured logs and request ids: the id comes back in a header, is on the log lines of
its request and on the events it wrote; JSON lines are JSON; credentials are scrubbed."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import time
from pathlib import Path

import httpx
from sqlalchemy import select

from tickethub.ops import logs, request_id
from tickethub.sdk.testing import free_port, hub_command
from tickethub.store.tables import events


async def test_a_response_carries_a_request_id(client, agent):
    response = await client.get("/healthz")
    generated = response.headers["x-request-id"]
    assert len(generated) == 32
    again = await client.get("/healthz")
    assert again.headers["x-request-id"] != generated
    kept = await client.get("/healthz", headers={"X-Request-ID": "lb-7f3a:42"})
    assert kept.headers["x-request-id"] == "lb-7f3a:42"


async def test_an_insane_incoming_id_is_replaced(client):
    for bad in (b"has space", b"x" * 129, "caf\u00e9".encode("latin-1"), b"", b"a\x00b"):
        response = await client.get("/healthz", headers={"X-Request-ID": bad})
        assert response.headers["x-request-id"].encode("latin-1") != bad
        assert len(response.headers["x-request-id"]) == 32


async def test_the_fast_lane_answers_with_a_request_id_too(client, agent):
    response = await client.post("/ap/v1/agent/tasks", json={"input": "x"}, headers={
        **agent, "X-Request-ID": "ap-create-1"})
    assert response.status_code == 200
    assert response.headers["x-request-id"] == "ap-create-1"


async def test_events_a_request_writes_carry_its_id(client, agent, responder, runtime):
    response = await client.post("/api/v1/tickets", json={"title": "Which region?"},
                                 headers={**agent, "X-Request-ID": "ask-req-1"})
    ticket_id = response.json()["id"]
    await client.post(f"/api/v1/tickets/{ticket_id}/answer", json={"text": "eu"},
                      headers={**responder, "X-Request-ID": "answer-req-2"})
    with runtime.engine.connect() as c:
        rows = c.execute(select(events.c.type, events.c.request_id)
                         .where(events.c.ticket_id == ticket_id)
                         .order_by(events.c.seq)).all()
    assert [tuple(r) for r in rows] == [("ticket.created", "ask-req-1"),
                                        ("ticket.answered", "answer-req-2")]


async def test_log_lines_of_a_request_carry_its_id_as_json():
    stream = io.StringIO()
    handler = logs.handler("json", stream)
    logger = logging.getLogger("tickethub.test_logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

    async def app(scope, receive, send):
        logger.info("inside %s", "the request")
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}

    try:
        await request_id.serve(app, {"type": "http", "headers": [(b"x-request-id", b"r-1")]},
                               receive, send)
        logger.info("outside")
    finally:
        logger.removeHandler(handler)
    inside, outside = (json.loads(line) for line in stream.getvalue().splitlines())
    assert inside["message"] == "inside the request" and inside["request_id"] == "r-1"
    assert inside["level"] == "info" and inside["logger"] == "tickethub.test_logs"
    assert inside["time"].endswith("+00:00")
    assert "request_id" not in outside
    assert (b"x-request-id", b"r-1") in sent[0]["headers"]


def test_credentials_are_scrubbed_from_output():
    token = "th_" + "A1b2" * 10
    line = logs.redact(f"got {token} with Authorization: Bearer sekrit-123 and "
                       "password=hunter2&user=bob, token: 'abc' "
                       "POST https://api.telegram.org/bot123456:AAH-tele_gram/sendMessage")
    assert token not in line and "sekrit-123" not in line and "hunter2" not in line
    assert "AAH-tele_gram" not in line and "/sendMessage" in line
    assert "abc" not in line and "user=bob" in line
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "boom %s", (token,), None)
    assert token not in logs.JsonFormatter().format(record)
    record.request_id = "-"
    assert token not in logs.TextFormatter().format(record)


def test_serve_writes_json_lines_only(tmp_path: Path):
    port = free_port()
    data = tmp_path / "data"
    data.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKETHUB_")}
    env.update(TICKETHUB_LOG_FORMAT="json", TICKETHUB_LOG_LEVEL="info")
    process = subprocess.Popen([*hub_command(), "serve", "--port", str(port), "--data-dir",
                                str(data)], env=env, cwd=data, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert response.headers["x-request-id"]
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    lines = [line for line in stderr.splitlines() if line.strip()]
    parsed = [json.loads(line) for line in lines]  # every line is one JSON object
    messages = " ".join(p["message"] for p in parsed)
    assert "tickethub is running at" in messages
    assert any(p["logger"].startswith("uvicorn") for p in parsed)  # uvicorn's lines too
    token = (data / "admin-token").read_text().strip()
    assert token not in stderr  # the generated admin token is saved, not logged


def test_the_suite_wide_scan_catches_a_leak():
    from tests.log_scan import TokenLeakWatch

    watch = TokenLeakWatch()
    token = watch.remember("th_" + "Z9y8" * 10)
    clean = logging.LogRecord("tickethub", logging.INFO, __file__, 1, "created a token", (),
                              None)
    leaky = logging.LogRecord("tickethub", logging.INFO, __file__, 1, "token %s", (token,),
                              None)
    quiet = logging.LogRecord("httpx", logging.INFO, __file__, 1, "GET /?t=%s", (token,),
                              None)
    for record in (clean, leaky, quiet):
        watch.emit(record)
    assert len(watch.leaks) == 1 and watch.records == 2
