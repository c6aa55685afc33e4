"""Shared fixtures: a hub on SQLite and (when a server is there) PostgreSQL, an in-process
HTTP client bound to its ASGI app, and tokens for each role."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tickethub.api.app import create_app
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings
from tickethub.store.engine import make_engine
from tickethub.store.migrate import upgrade

ADMIN_TOKEN = "th_admin_" + "x" * 40
PG_URL = os.environ.get("SQLALCHEMY_URL")  # printed by ../shared/recipes/postgresql.sh
IN_CI = os.environ.get("CI") == "true"
# How long a test's HTTP request to a live hub or fake server may take. httpx's default
# (5 s) was once exceeded on a loaded CI machine (2 cores, PostgreSQL beside the hub);
# a test waits for behaviour, not for speed (speed is measured in ``bench/``).
LIVE_TIMEOUT = 30.0


def require_server(name: str, available: bool) -> None:
    """Skip when a real server is missing, except in CI where that is a failure."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"{name} is required in CI; .ci/run must start it from shared/recipes")
    pytest.skip(f"{name} is not running (make test starts it from ../shared/recipes)")


class _PgDatabases:
    """One migrated template database; each test gets a fresh copy of it."""

    def __init__(self, url: str) -> None:
        self.url = make_url(url)
        self.admin = create_engine(self.url, isolation_level="AUTOCOMMIT")
        self.template = f"th_template_{uuid.uuid4().hex[:8]}"
        with self.admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{self.template}"'))
        engine = make_engine(self.url.set(database=self.template).render_as_string(False))
        upgrade(engine)
        engine.dispose()
        self.made: list[str] = []

    def fresh(self) -> str:
        name = f"th_test_{uuid.uuid4().hex[:12]}"
        with self.admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"'))
        self.made.append(name)
        return self.url.set(database=name).render_as_string(hide_password=False)

    def drop(self, name_url: str) -> None:
        name = make_url(name_url).database
        with self.admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    def close(self) -> None:
        with self.admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{self.template}" WITH (FORCE)'))
        self.admin.dispose()


@pytest.fixture(scope="session", autouse=True)
def no_token_in_the_logs() -> Iterator[None]:
    """Every log record of the whole run is checked for the tokens the run created
    (tests/log_scan.py); a leak fails the session at its end."""
    from tests.log_scan import watching

    with watching((ADMIN_TOKEN,)) as watch:
        yield
    assert not watch.leaks, f"tokens in the logs ({len(watch.leaks)}):\n" + "\n".join(
        watch.leaks[:20])


@pytest.fixture(scope="session")
def pg_databases() -> Iterator[_PgDatabases | None]:
    if not PG_URL:
        yield None
        return
    databases = _PgDatabases(PG_URL)
    yield databases
    databases.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path,
                 pg_databases: _PgDatabases | None) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'hub.db'}"
        return
    require_server("PostgreSQL", pg_databases is not None)
    assert pg_databases is not None
    url = pg_databases.fresh()
    yield url
    pg_databases.drop(url)


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url=database_url,
                    admin_token=ADMIN_TOKEN, delivery_poll_seconds=0.05,
                    delivery_backoff_seconds=0.05)


@pytest.fixture
def runtime(settings: Settings) -> Iterator[HubRuntime]:
    hub = HubRuntime(settings)
    yield hub
    hub.close()


@pytest.fixture
async def client(runtime: HubRuntime) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client talking to the in-process app, with the hub's loops running."""
    app = create_app(runtime)
    async with runtime.running():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hub") as c:
            yield c


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def admin() -> dict[str, str]:
    return bearer(ADMIN_TOKEN)


async def make_token(client: httpx.AsyncClient, role: str, name: str) -> dict[str, str]:
    return await make_scoped_token(client, role, name, [])


async def make_scoped_token(client: httpx.AsyncClient, role: str, name: str,
                            scopes: list[str]) -> dict[str, str]:
    """Headers with a new token for ``name``; ``scopes`` e.g. ``["read:all"]``."""
    body: dict[str, object] = {"role": role, "name": name}
    if scopes:
        body["scopes"] = scopes
    response = await client.post("/api/v1/tokens", json=body, headers=bearer(ADMIN_TOKEN))
    assert response.status_code == 201, response.text
    return bearer(response.json()["token"])


@pytest.fixture
async def agent(client: httpx.AsyncClient) -> dict[str, str]:
    return await make_token(client, "agent", "agent-1")


@pytest.fixture
async def responder(client: httpx.AsyncClient) -> dict[str, str]:
    return await make_token(client, "responder", "alice")


@pytest.fixture
async def live_url(runtime: HubRuntime) -> AsyncIterator[str]:
    """The hub served by a real uvicorn on a free loopback port, in this event loop.

    Needed for streaming responses (SSE), which httpx's ASGI transport buffers whole."""
    import asyncio

    import uvicorn

    app = create_app(runtime)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                            lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    await task


@pytest.fixture
async def live_client(live_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=live_url, timeout=LIVE_TIMEOUT) as c:
        yield c
