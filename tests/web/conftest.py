"""Web inbox fixtures: people with passwords and signed-in browser-like clients."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.conftest import ADMIN_TOKEN
from tickethub.api.app import create_app
from tickethub.domain.actors import Role
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings
from tickethub.testing import FakeClock

PASSWORD = "correct horse battery"
_META_CSRF = re.compile(r'<meta name="csrf" content="([^"]+)">')
_FORM_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


async def sign_in(client: httpx.AsyncClient, name: str, password: str = PASSWORD,
                  next_path: str = "/") -> httpx.Response:
    form = await client.get("/login", params={"next": next_path})
    token = _FORM_CSRF.search(form.text)
    assert token, form.text
    return await client.post("/login", data={"csrf": token.group(1), "username": name,
                                             "password": password, "next": next_path})


def csrf_of(html: str) -> str:
    found = _META_CSRF.search(html)
    assert found, "page has no CSRF token (not signed in?)"
    return found.group(1)


class Browser:
    """A signed-in person: an httpx client with their cookies plus their CSRF token."""

    def __init__(self, client: httpx.AsyncClient, csrf: str) -> None:
        self.client = client
        self.csrf = csrf

    async def get(self, url: str, **kw: Any) -> httpx.Response:
        return await self.client.get(url, **kw)

    async def post(self, url: str, data: dict[str, Any], *, csrf: bool = True
                   ) -> httpx.Response:
        body = {"csrf": self.csrf, **data} if csrf else data
        return await self.client.post(url, data=body)


@pytest.fixture
def person(runtime: HubRuntime) -> str:
    runtime.sessions.set_password("pat", PASSWORD, Role.RESPONDER)
    return "pat"


@pytest.fixture
async def pat(client: httpx.AsyncClient, person: str) -> Browser:
    """``pat``, a responder, signed in (shares cookies with ``client``)."""
    response = await sign_in(client, person)
    assert response.status_code == 303, response.text
    return Browser(client, csrf_of((await client.get("/")).text))


async def ask(client: httpx.AsyncClient, headers: dict[str, str], **ticket: Any
              ) -> dict[str, Any]:
    ticket.setdefault("kind", "question")
    response = await client.post("/api/v1/tickets", json=ticket, headers=headers)
    assert response.status_code == 201, response.text
    result: dict[str, Any] = response.json()
    return result


@pytest.fixture
async def clocked_app(tmp_path: Path, database_url: str
                      ) -> AsyncIterator[tuple[FastAPI, FakeClock, HubRuntime]]:
    """A running hub app on a fake clock, with ``pat`` (password :data:`PASSWORD`)."""
    clock = FakeClock(datetime.now(UTC))
    settings = Settings(data_dir=tmp_path / "d", database_url=database_url,
                        admin_token=ADMIN_TOKEN, session_ttl_seconds=3600)
    hub = HubRuntime(settings, clock=clock)
    hub.sessions.set_password("pat", PASSWORD)
    app = create_app(hub)
    async with hub.running():  # the doors' own lifespan hooks are not needed here
        yield app, clock, hub
    hub.close()


@pytest.fixture
async def clocked(clocked_app: tuple[FastAPI, FakeClock, HubRuntime]
                  ) -> AsyncIterator[tuple[httpx.AsyncClient, FakeClock, HubRuntime]]:
    """:func:`clocked_app` and a client of it."""
    app, clock, hub = clocked_app
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://hub") as c:
        yield c, clock, hub
