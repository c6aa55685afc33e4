"""Backups of a hub, taken while it serves, and their restore (docs/operations.md).

A backup is a folder::

    PATH/manifest.json     what was copied: database kind, schema revision, rows per
                           table (SQLite), every file with its size and SHA-256
    PATH/tickethub.db      SQLite: a consistent copy made with SQLite's online backup API
    PATH/tickethub.pgdump  PostgreSQL: pg_dump's custom format (one snapshot)
    PATH/files/...         everything else in the data folder: Agent Protocol artifacts,
                           the admin token, the keys that seal agent secrets and sign
                           mail replies

Contracts:

* The database is copied first, in one snapshot, then the files. Files are only ever
  added while the hub runs, so every file a backed-up row refers to is in the backup
  (a file written after the snapshot may be there too, unreferenced).
* SQLite: the copy is one read transaction; under WAL the hub keeps writing meanwhile.
  :func:`verify` restores a backup into a fresh data folder and compares every table's
  row count and every file's digest with the manifest; ``backup`` runs it unless told not.
* A restore refuses a target that already holds a hub (unless ``force``): it never
  mixes two hubs. The hub must not be running on the target while restoring.
* The backup folder holds secrets (tokens, keys): it is created readable by its owner only.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL, make_url

from tickethub.errors import Conflict, ValidationFailed
from tickethub.settings import Settings

MANIFEST = "manifest.json"
SQLITE_FILE = "tickethub.db"
PG_FILE = "tickethub.pgdump"
FILES = "files"
FORMAT = 1


class BackupFailed(ValidationFailed):
    """A backup or restore could not be made or does not match its manifest."""

    code = "backup_failed"


@dataclass
class Manifest:
    dialect: str
    created_at: str
    revision: str | None
    tables: dict[str, int] = field(default_factory=dict)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    format: int = FORMAT

    @classmethod
    def load(cls, folder: Path) -> Manifest:
        path = folder / MANIFEST
        if not path.is_file():
            raise BackupFailed(f"{folder} is not a tickethub backup (no {MANIFEST})",
                               field="path")
        data = json.loads(path.read_text())
        if data.get("format") != FORMAT:
            raise BackupFailed(f"unknown backup format {data.get('format')!r}", field="path")
        return cls(**data)

    def save(self, folder: Path) -> None:
        (folder / MANIFEST).write_text(json.dumps(asdict(self), indent=2, sort_keys=True))


# -- SQLite -------------------------------------------------------------------------------

def _sqlite_path(url: URL) -> Path:
    if not url.database or url.database == ":memory:":
        raise BackupFailed("an in-memory database cannot be backed up", field="database_url")
    return Path(url.database).expanduser().resolve()


def sqlite_counts(path: Path) -> dict[str, int]:
    """Rows per table of the SQLite database at ``path`` (after an integrity check)."""
    with sqlite3.connect(path) as db:
        ok = db.execute("PRAGMA integrity_check").fetchone()[0]
        if ok != "ok":
            raise BackupFailed(f"{path}: integrity check failed: {ok}", field="path")
        names = [r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
            " ORDER BY name")]
        return {n: int(db.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0])
                for n in names}


def _sqlite_copy(source: Path, target: Path) -> None:
    """Copy a live SQLite database with the online backup API, in one step (one read
    transaction: a consistent snapshot; under WAL writers go on meanwhile)."""
    src = sqlite3.connect(source, timeout=30)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()


def _revision_sqlite(path: Path) -> str | None:
    with sqlite3.connect(path) as db:
        try:
            row = db.execute("SELECT version_num FROM alembic_version").fetchone()
        except sqlite3.Error:
            return None
    return row[0] if row else None


# -- PostgreSQL ---------------------------------------------------------------------------

def pg_tool(name: str) -> str:
    """The path of ``pg_dump``/``pg_restore``: on PATH, else the newest under
    /usr/lib/postgresql/*/bin (Debian's layout)."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit()
                        else 0)
    if not candidates:
        raise BackupFailed(f"{name} not found (install the PostgreSQL client tools)",
                           field="database_url")
    return candidates[-1]


def pg_environment(url: URL) -> dict[str, str]:
    """libpq variables for ``url``: the password goes in the environment, never on a
    command line (where ``ps`` would show it)."""
    env = dict(os.environ)
    for key, value in (("PGHOST", url.host), ("PGPORT", url.port), ("PGUSER", url.username),
                       ("PGPASSWORD", url.password), ("PGDATABASE", url.database)):
        if value is not None:
            env[key] = str(value)
    return env


def _run(command: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise BackupFailed(f"{Path(command[0]).name}: {last}", field="database_url")


def _revision_pg(url: URL) -> str | None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as c:
            return c.execute(text("SELECT version_num FROM alembic_version")).scalar()
    finally:
        engine.dispose()


# -- files --------------------------------------------------------------------------------

def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _data_files(data_dir: Path, skip: set[Path]) -> list[Path]:
    if not data_dir.is_dir():
        return []
    return sorted(p for p in data_dir.rglob("*")
                  if p.is_file() and p.resolve() not in skip)


def _copy_files(files: list[Path], base: Path, target: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for path in files:
        rel = path.relative_to(base).as_posix()
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)
        out[rel] = {"size": dest.stat().st_size, "sha256": _digest(dest)}
    return out


def _sqlite_side_files(db: Path) -> set[Path]:
    return {db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"),
            db.with_name(db.name + "-journal")}


# -- the three operations -----------------------------------------------------------------

def backup(settings: Settings, dest: Path, *, verify_copy: bool = True) -> Manifest:
    """Back the hub of ``settings`` up into the new folder ``dest`` (see the module)."""
    if dest.exists() and any(dest.iterdir()):
        raise Conflict(f"{dest} exists and is not empty; give a new folder", field="path")
    dest.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(dest, 0o700)
    url = make_url(settings.effective_database_url)
    data_dir = settings.data_dir.resolve()
    now = datetime.now(UTC).isoformat(timespec="seconds")
    if url.get_backend_name() == "sqlite":
        source = _sqlite_path(url)
        if not source.is_file():
            raise BackupFailed(f"no database at {source}", field="database_url")
        copy = dest / SQLITE_FILE
        _sqlite_copy(source, copy)
        manifest = Manifest("sqlite", now, _revision_sqlite(copy), sqlite_counts(copy))
        skip = _sqlite_side_files(source)
    elif url.get_backend_name() == "postgresql":
        env = pg_environment(url)
        _run([pg_tool("pg_dump"), "--format=custom", "--no-owner", "--no-privileges",
              f"--file={dest / PG_FILE}"], env)
        manifest = Manifest("postgresql", now, _revision_pg(url))
        skip = set()
    else:
        raise BackupFailed(f"cannot back up a {url.get_backend_name()} database",
                           field="database_url")
    manifest.files = _copy_files(_data_files(data_dir, skip), data_dir, dest / FILES)
    manifest.save(dest)
    if verify_copy and manifest.dialect == "sqlite":
        verify(dest)
    return manifest


def restore(settings: Settings, source: Path, *, force: bool = False) -> Manifest:
    """Restore the backup folder ``source`` into the hub of ``settings`` (database and
    data folder), then check it against the manifest."""
    manifest = Manifest.load(source)
    url = make_url(settings.effective_database_url)
    data_dir = settings.data_dir.resolve()
    kind = url.get_backend_name()
    if kind != manifest.dialect:
        raise BackupFailed(f"this backup is of a {manifest.dialect} hub; the target is "
                           f"{kind}", field="database_url")
    if kind == "sqlite":
        target = _sqlite_path(url)
        if target.exists() and target.stat().st_size > 0 and not force:
            raise Conflict(f"{target} already holds a hub; restore into a fresh data folder "
                           "(or --force to replace it)", field="data_dir")
        target.parent.mkdir(parents=True, exist_ok=True)
        for side in _sqlite_side_files(target):
            side.unlink(missing_ok=True)
        _sqlite_copy(source / SQLITE_FILE, target)
        counts = sqlite_counts(target)
        if counts != manifest.tables:
            differ = sorted(t for t in set(counts) | set(manifest.tables)
                            if counts.get(t) != manifest.tables.get(t))
            raise BackupFailed(f"restored rows differ from the backup in: {', '.join(differ)}",
                               field="path")
    else:
        command = [pg_tool("pg_restore"), "--no-owner", "--no-privileges", "--exit-on-error",
                   f"--dbname={url.database}"]
        if force:
            command += ["--clean", "--if-exists"]
        _run([*command, str(source / PG_FILE)], pg_environment(url))
    data_dir.mkdir(parents=True, exist_ok=True)
    for rel, meta in manifest.files.items():
        dest = data_dir / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / FILES / rel, dest)
        if _digest(dest) != meta["sha256"]:
            raise BackupFailed(f"restored file {rel} differs from the backup", field="path")
    return manifest


def verify(source: Path) -> Manifest:
    """Restore the (SQLite) backup ``source`` into a fresh temporary data folder and
    compare it with the manifest; raises :class:`BackupFailed` on any difference."""
    manifest = Manifest.load(source)
    if manifest.dialect != "sqlite":
        raise BackupFailed("only SQLite backups are verified this way; restore a "
                           "PostgreSQL backup into a scratch database", field="path")
    with tempfile.TemporaryDirectory(prefix="tickethub-verify-") as scratch:
        settings = Settings(data_dir=Path(scratch) / "data", database_url=None)
        restore(settings, source)
    return manifest
