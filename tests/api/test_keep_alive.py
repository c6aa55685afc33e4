"""An unexpected error is a problem+json 500 on a connection that stays usable: a real
uvicorn server, one client, two requests on one keep-alive connection."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN, bearer


async def test_the_next_request_after_a_500_reuses_the_connection(
        live_url, runtime, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture):
    def broken(ticket_id: int, viewer: object = None) -> None:
        raise RuntimeError("a bug the hub did not expect")

    monkeypatch.setattr(runtime.tickets, "get", broken)
    peers: list[object] = []

    async def remember_peer(response: httpx.Response) -> None:
        stream = response.extensions["network_stream"]
        peers.append(stream.get_extra_info("client_addr"))

    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    async with httpx.AsyncClient(base_url=live_url, limits=limits, timeout=10,
                                 event_hooks={"response": [remember_peer]}) as client:
        failed = await client.get("/api/v1/tickets/1", headers=bearer(ADMIN_TOKEN))
        assert failed.status_code == 500
        assert failed.headers["content-type"] == "application/problem+json"
        assert failed.json()["code"] == "internal_error"
        assert "a bug" not in failed.text  # the details go to the log, not the client
        healthy = await client.get("/healthz")
        assert healthy.status_code == 200
    assert len(peers) == 2 and peers[0] == peers[1], peers  # the same local port: reused
    assert "a bug the hub did not expect" in caplog.text
