"""The webhook channel: signed POSTs from the durable queue, retried, never lost."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.api.test_tickets import ask
from tests.waiting import eventually


class Receiver:
    """A real HTTP receiver that fails the first ``fail_first`` requests."""

    def __init__(self, fail_first: int = 0) -> None:
        self.fail_first = fail_first
        self.received: list[tuple[dict, dict]] = []

    async def handle(self, request: Request) -> Response:
        body = await request.body()
        if self.fail_first > 0:
            self.fail_first -= 1
            return Response(status_code=503)
        self.received.append((dict(request.headers), {"raw": body, **json.loads(body)}))
        return Response(status_code=204)


async def serve(receiver: Receiver):
    app = Starlette(routes=[Route("/hook", receiver.handle, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                          lifespan="off"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    return server, task, f"http://127.0.0.1:{port}/hook"


async def test_events_are_posted_signed_and_retried_until_delivered(client, admin, agent):
    receiver = Receiver(fail_first=2)
    server, task, url = await serve(receiver)
    try:
        hook = (await client.post("/api/v1/webhooks",
                                  json={"url": url, "events": ["ticket.created"]},
                                  headers=admin)).json()
        assert len(hook["secret"]) >= 16
        await asyncio.sleep(0.2)  # let the channel pick its starting point
        ticket = await ask(client, agent, title="hello hooks")
        await eventually(lambda: len(receiver.received) == 1, "one delivery received",
                         seconds=10, every=0.05)
        headers, payload = receiver.received[0]
        expected = "sha256=" + hmac.new(hook["secret"].encode(), payload["raw"],
                                        hashlib.sha256).hexdigest()
        assert hmac.compare_digest(headers["x-tickethub-signature-256"], expected)
        assert headers["x-tickethub-event"] == "ticket.created"
        assert payload["event"]["ticket_id"] == ticket["id"]
        assert headers["x-tickethub-delivery"] == payload["delivery"]
        # The receiver has the payload before the hub has its 200 and marks the
        # delivery done: read the outcome once it is written.
        for _ in range(200):
            deliveries = (await client.get("/api/v1/deliveries?channel=webhook",
                                           headers=admin)).json()
            if deliveries and deliveries[0]["status"] != "pending":
                break
            await asyncio.sleep(0.05)
        assert [(d["status"], d["attempts"]) for d in deliveries] == [("delivered", 3)]
    finally:
        server.should_exit = True
        await task


async def test_a_delivery_is_not_repeated_and_filters_apply(client, admin, agent, responder):
    receiver = Receiver()
    server, task, url = await serve(receiver)
    try:
        await client.post("/api/v1/webhooks", json={"url": url, "events": ["ticket.answered"]},
                          headers=admin)
        await asyncio.sleep(0.2)
        ticket = await ask(client, agent)
        await client.post(f"/api/v1/tickets/{ticket['id']}/answer", json={"text": "ok"},
                          headers=responder)
        await eventually(lambda: len(receiver.received) == 1, "one delivery received",
                         seconds=10, every=0.05)
        await asyncio.sleep(0.5)
        assert [p["event"]["type"] for _, p in receiver.received] == ["ticket.answered"]
    finally:
        server.should_exit = True
        await task


async def test_bad_webhook_registrations(client, admin, agent):
    not_url = await client.post("/api/v1/webhooks", json={"url": "ftp://x"}, headers=admin)
    assert not_url.status_code == 422 and not_url.json()["field"] == "url"
    bad_event = await client.post("/api/v1/webhooks",
                                  json={"url": "http://127.0.0.1:9/x", "events": ["nope"]},
                                  headers=admin)
    assert bad_event.status_code == 422 and bad_event.json()["field"] == "events"
    short = await client.post("/api/v1/webhooks",
                              json={"url": "http://127.0.0.1:9/x", "secret": "short"},
                              headers=admin)
    assert short.status_code == 422 and short.json()["field"] == "secret"
    forbidden = await client.post("/api/v1/webhooks", json={"url": "http://127.0.0.1:9/x"},
                                  headers=agent)
    assert forbidden.status_code == 403
    missing = await client.delete("/api/v1/webhooks/999", headers=admin)
    assert missing.status_code == 404
