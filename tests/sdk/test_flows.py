"""The sans-I/O flows, driven by hand: retry, backoff, resume and paging rules without a
server, so every branch is deterministic."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tickethub.sdk import HubUnavailable, NotFoundError
from tickethub.sdk.calls import Endpoints
from tickethub.sdk.flows import Backoff, Emit, Open, ReadLine, Send, Sleep, event_stream, wait
from tickethub.sdk.sse import SSEDecoder

API = Endpoints(None, has_token=True)
REQUEST = httpx.Request("GET", "http://hub.test/api/v1/tickets/7/wait")


def ticket_json(status: str) -> dict[str, Any]:
    return {"id": 7, "kind": "question", "title": "t", "status": status,
            "outcome": None if status == "open" else status, "labels": [],
            "created_at": "2026-01-01T00:00:00+00:00",
            "updated_at": "2026-01-01T00:00:00+00:00"}


def reply(status: int, body: Any) -> httpx.Response:
    return httpx.Response(status, json=body, request=REQUEST)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def drive(flow, script, clock: Clock | None = None) -> tuple[Any, list[Any]]:
    """Run ``flow``, answering each Send with the next item of ``script`` (a response or
    an exception to throw). Sleeps advance ``clock``. Returns (result, instructions)."""
    seen: list[Any] = []
    script = list(script)
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            op = flow.throw(error) if error else flow.send(value)
        except StopIteration as stop:
            return stop.value, seen
        seen.append(op)
        value, error = None, None
        if isinstance(op, Sleep) and clock is not None:
            clock.now += op.seconds
        elif isinstance(op, Send | Open | ReadLine):
            item = script.pop(0)
            if isinstance(item, BaseException):
                error = item
            else:
                value = item


def test_backoff_grows_is_capped_and_jittered() -> None:
    b = Backoff(first=0.5, factor=2, cap=4, jitter=0.5)
    assert [b.delay(n, rng=lambda: 0.0) for n in range(6)] == [0.5, 1, 2, 4, 4, 4]
    assert b.delay(3, rng=lambda: 1.0) == 2.0  # at most half is taken off
    assert b.delay(10_000, rng=lambda: 0.0) == 4  # no overflow on long outages


def test_wait_rides_out_connection_errors_and_503_then_returns_the_answer() -> None:
    down = httpx.ConnectError("refused", request=REQUEST)
    script = [reply(200, ticket_json("open")), down, down,
              reply(503, {"code": "unavailable", "status": 503, "detail": "starting"}),
              reply(200, ticket_json("answered"))]
    backoff = Backoff(first=1, factor=2, cap=3, jitter=0)
    result, seen = drive(wait(API, 7, None, 50, backoff), script)
    assert result.status == "answered"
    sleeps = [op for op in seen if isinstance(op, Sleep)]
    assert [op.seconds for op in sleeps] == [1, 2, 3]
    assert [op.error.code for op in sleeps] == ["unreachable", "unreachable", "unavailable"]
    polls = [op.call for op in seen if isinstance(op, Send)]
    assert all(c.path == "/api/v1/tickets/7/wait" for c in polls)
    assert polls[0].params == {"timeout": 50} and polls[0].read_timeout == 65


def test_wait_shortens_the_last_poll_to_the_timeout_and_returns_the_last_state() -> None:
    clock = Clock()

    def held(seconds: float) -> httpx.Response:
        clock.now += seconds
        return reply(200, ticket_json("open"))

    flow = wait(API, 7, 120, 50, Backoff(), clock=clock)
    op = flow.send(None)
    timeouts = []
    while True:
        timeouts.append(op.call.params["timeout"])
        try:
            op = flow.send(held(op.call.params["timeout"]))
        except StopIteration as stop:
            result = stop.value
            break
    assert timeouts == [50, 50, 20]
    assert result.waiting


def test_wait_raises_when_the_hub_is_never_reached_before_the_timeout() -> None:
    clock = Clock()
    down = httpx.ConnectError("refused", request=REQUEST)
    with pytest.raises(HubUnavailable) as caught:
        drive(wait(API, 7, 2.0, 50, Backoff(first=0.5, jitter=0), clock=clock),
              [down] * 10, clock)
    assert caught.value.code == "unreachable" and "hub.test" in caught.value.detail
    assert clock.now == pytest.approx(2.0)


def test_wait_does_not_retry_what_a_retry_cannot_fix() -> None:
    with pytest.raises(NotFoundError):
        drive(wait(API, 7, None, 50, Backoff()),
              [reply(404, {"code": "not_found", "detail": "no", "field": "id"})])


def test_event_stream_resumes_with_last_event_id_after_a_drop() -> None:
    def event(seq: int) -> list[str]:
        body = {"seq": seq, "type": "ticket.created", "ticket_id": 1, "actor": "a",
                "data": {}, "at": "2026-01-01T00:00:00+00:00"}
        return [f"id: {seq}", "event: ticket.created", f"data: {json.dumps(body)}", ""]

    ok = httpx.Response(200, request=REQUEST)
    flow = event_stream(API, 4, None, None, Backoff(jitter=0))
    script = [ok, "retry: 1000", "", *event(5), ": keep-alive", "",
              httpx.RemoteProtocolError("peer closed", request=REQUEST),
              httpx.ConnectError("refused", request=REQUEST),
              ok, *event(6)]
    seen: list[Any] = []
    emitted = []
    value: Any = None
    error: BaseException | None = None
    while len(emitted) < 2:
        op = flow.throw(error) if error else flow.send(value)
        seen.append(op)
        value, error = None, None
        if isinstance(op, Emit):
            emitted.append(op.item.seq)
        elif isinstance(op, Open | ReadLine):
            item = script.pop(0)
            error, value = (item, None) if isinstance(item, BaseException) else (None, item)
    opens = [op.call for op in seen if isinstance(op, Open)]
    assert emitted == [5, 6]
    assert opens[0].params["since"] == 4 and "Last-Event-ID" not in opens[0].headers
    assert [c.headers.get("Last-Event-ID") for c in opens[1:]] == ["5", "5"]
    sleeps = [op for op in seen if isinstance(op, Sleep)]
    assert [op.error.code for op in sleeps] == ["unreachable", "unreachable"]


def test_sse_decoder_follows_the_spec() -> None:
    d = SSEDecoder()
    lines = [": comment", "retry: 2500", "id: 9", "event: x", "data: one", "data:two",
             "unknown: field", ""]
    events = [e for e in map(d.feed, lines) if e]
    assert len(events) == 1
    assert (events[0].event, events[0].data, events[0].id) == ("x", "one\ntwo", "9")
    assert d.retry_ms == 2500
    assert d.feed("") is None  # an empty event is not dispatched
    assert d.feed("data: y") is None and d.feed("").event == "message"
