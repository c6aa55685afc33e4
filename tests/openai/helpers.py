"""Acting as the person: find the ticket an agent's request opened, and answer it."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from live import Hub


def _as_person(hub: Hub) -> httpx.AsyncClient:
    return hub.client(hub.responder)


async def next_ticket(hub: Hub, *, kind: str | None = None, after: int = 0,
                      timeout: float = 10.0) -> dict[str, Any]:
    """The newest waiting ticket with an id above ``after`` (polls until one appears)."""
    params: dict[str, Any] = {"status": ["open"]}
    if kind:
        params["kind"] = kind
    async with _as_person(hub) as c:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            items = (await c.get("/api/v1/tickets", params=params)).json()["items"]
            fresh = [t for t in items if t["id"] > after]
            if fresh:
                return dict(fresh[0])
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError("no ticket appeared")
            await asyncio.sleep(0.02)


async def respond(hub: Hub, ticket_id: int, action: str, body: dict[str, Any]
                  ) -> httpx.Response:
    """POST /answer, /approve or /deny as the responder."""
    async with _as_person(hub) as c:
        return await c.post(f"/api/v1/tickets/{ticket_id}/{action}", json=body)


async def get(hub: Hub, path: str) -> Any:
    async with _as_person(hub) as c:
        response = await c.get(path)
        assert response.status_code == 200, response.text
        return response.json()
