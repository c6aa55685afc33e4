"""``tickethub backup`` / ``restore``: a backup taken while the hub is being written to
restores into a fresh data folder with nothing missing (SQLite), and the pg_dump /
pg_restore procedure round-trips (PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, func, inspect, select, text

from tests.conftest import ADMIN_TOKEN, bearer
from tickethub.api.app import create_app
from tickethub.cli.main import cli
from tickethub.ops.backup import Manifest, backup, restore, sqlite_counts
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings
from tickethub.store.tables import events, tickets

AP = "/ap/v1/agent/tasks"


@pytest.fixture
def database_url(tmp_path: Path) -> str:  # SQLite only here; PostgreSQL has its own test
    return f"sqlite:///{tmp_path / 'data' / 'tickethub.db'}"


async def _upload(client: httpx.AsyncClient, content: bytes) -> tuple[str, str]:
    task = (await client.post(AP, json={"input": "t"})).json()
    up = await client.post(f"{AP}/{task['task_id']}/artifacts",
                           files={"file": ("data.bin", content)})
    assert up.status_code == 200, up.text
    return task["task_id"], up.json()["artifact_id"]


async def test_a_backup_under_write_load_restores_with_nothing_missing(
        client, agent, responder, runtime, tmp_path):
    content = bytes(range(256)) * 40
    task_id, artifact_id = await _upload(client, content)
    acked: list[int] = []
    stop = asyncio.Event()

    async def write() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            r = await client.post("/api/v1/tickets", json={"title": f"q{n}"}, headers=agent)
            assert r.status_code == 201
            acked.append(r.json()["id"])
            if n % 3 == 0:
                await client.post(f"/api/v1/tickets/{acked[-1]}/answer",
                                  json={"text": "ok"}, headers=responder)

    writers = [asyncio.create_task(write()) for _ in range(3)]
    while len(acked) < 30:
        await asyncio.sleep(0.01)
    before = list(acked)
    dest = tmp_path / "backup"
    manifest = await asyncio.to_thread(backup, runtime.settings, dest)  # verifies too
    during = len(acked) - len(before)
    stop.set()
    await asyncio.gather(*writers)
    assert during > 0, "the hub kept writing while the backup ran"

    fresh = Settings(data_dir=tmp_path / "restored", admin_token=ADMIN_TOKEN)
    restored = restore(fresh, dest)
    assert restored.tables == manifest.tables
    hub = HubRuntime(fresh)
    try:
        transport = httpx.ASGITransport(app=create_app(hub))
        async with hub.running(), httpx.AsyncClient(transport=transport,
                                                    base_url="http://hub") as c:
            for ticket_id in before:
                r = await c.get(f"/api/v1/tickets/{ticket_id}", headers=bearer(ADMIN_TOKEN))
                assert r.status_code == 200, ticket_id
            down = await c.get(f"{AP}/{task_id}/artifacts/{artifact_id}")
            assert down.status_code == 200 and down.content == content
        with hub.engine.connect() as conn:
            # every ticket in the copy has its creation event: one snapshot, not a mix
            n_tickets = conn.execute(select(func.count()).select_from(tickets)).scalar()
            created = conn.execute(select(func.count()).select_from(events).where(
                events.c.type == "ticket.created")).scalar()
            assert n_tickets == created == manifest.tables["tickets"]
    finally:
        hub.close()
    assert (dest.stat().st_mode & 0o777) == 0o700
    assert any(rel.startswith("ap-artifacts/") for rel in manifest.files)


def test_a_tampered_backup_fails_verification(runtime, tmp_path):
    dest = tmp_path / "b"
    backup(runtime.settings, dest)
    m = json.loads((dest / "manifest.json").read_text())
    m["tables"]["tickets"] = m["tables"].get("tickets", 0) + 1
    (dest / "manifest.json").write_text(json.dumps(m))
    from tickethub.ops.backup import BackupFailed, verify

    with pytest.raises(BackupFailed, match="tickets"):
        verify(dest)


def test_cli_backup_and_restore_refuse_to_mix_hubs(runtime, tmp_path):
    data_dir = runtime.settings.data_dir
    runner = CliRunner()
    dest = tmp_path / "cli-backup"
    result = runner.invoke(cli, ["backup", str(dest), "--data-dir", str(data_dir), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["dialect"] == "sqlite" and summary["tables"]["tickets"] == 0
    again = runner.invoke(cli, ["backup", str(dest), "--data-dir", str(data_dir)])
    assert again.exit_code == 5 and "not empty" in again.output
    into_live = runner.invoke(cli, ["restore", str(dest), "--data-dir", str(data_dir)])
    assert into_live.exit_code == 5 and "already holds a hub" in into_live.output
    ok = runner.invoke(cli, ["restore", str(dest), "--data-dir", str(tmp_path / "new")])
    assert ok.exit_code == 0, ok.output
    assert sqlite_counts(tmp_path / "new" / "tickethub.db") == Manifest.load(dest).tables
    not_backup = runner.invoke(cli, ["restore", str(tmp_path), "--data-dir",
                                     str(tmp_path / "other")])
    assert not_backup.exit_code != 0 and "not a tickethub backup" in not_backup.output


async def test_postgresql_round_trip_with_pg_dump_and_pg_restore(tmp_path, pg_databases):
    from tests.conftest import require_server

    require_server("PostgreSQL", pg_databases is not None)
    source_url, target_url = pg_databases.fresh(), pg_databases.fresh()
    try:
        settings = Settings(data_dir=tmp_path / "pg-data", database_url=source_url,
                            admin_token=ADMIN_TOKEN)
        hub = HubRuntime(settings)
        try:
            transport = httpx.ASGITransport(app=create_app(hub))
            async with hub.running(), httpx.AsyncClient(transport=transport,
                                                        base_url="http://hub") as c:
                for i in range(5):
                    r = await c.post("/api/v1/tickets", json={"title": f"pg {i}"},
                                     headers=bearer(ADMIN_TOKEN))
                    assert r.status_code == 201
                task_id, artifact_id = await _upload(c, b"artifact on pg")
        finally:
            hub.close()
        dest = tmp_path / "pg-backup"
        manifest = backup(settings, dest)
        assert manifest.dialect == "postgresql" and (dest / "tickethub.pgdump").is_file()
        target = Settings(data_dir=tmp_path / "pg-restored", database_url=target_url)
        restore(target, dest, force=True)  # the target has the empty schema: --clean
        assert _pg_counts(source_url) == _pg_counts(target_url)
        assert _pg_counts(target_url)["tickets"] == 6  # five questions, the task's ticket
        stored = tmp_path / "pg-restored" / "ap-artifacts" / task_id / artifact_id
        assert stored.read_bytes() == b"artifact on pg"
    finally:
        pg_databases.drop(source_url)
        pg_databases.drop(target_url)


def _pg_counts(url: str) -> dict[str, int]:
    engine = create_engine(url)
    try:
        with engine.connect() as c:
            names = inspect(c).get_table_names()
            return {n: int(c.execute(text(f'SELECT count(*) FROM "{n}"')).scalar())
                    for n in names}
    finally:
        engine.dispose()
