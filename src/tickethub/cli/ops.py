"""``tickethub backup``, ``restore`` and ``doctor``: keeping a hub (docs/operations.md).

They work on the hub's own database and data folder (the same settings as ``serve``),
not through a running hub's API. ``backup`` may run while the hub serves.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

_DATA_DIR = click.option("--data-dir", type=click.Path(path_type=Path), default=None,
                         help="The hub's data folder [default: ./data or "
                              "TICKETHUB_DATA_DIR].")


def _settings(data_dir: Path | None) -> Any:
    from tickethub.settings import Settings

    overrides: dict[str, Any] = {"data_dir": data_dir} if data_dir else {}
    return Settings(**overrides)


def _summary(manifest: Any) -> dict[str, Any]:
    return {"dialect": manifest.dialect, "revision": manifest.revision,
            "created_at": manifest.created_at, "tables": manifest.tables,
            "files": len(manifest.files)}


@click.command("backup")
@click.argument("path", type=click.Path(path_type=Path))
@_DATA_DIR
@click.option("--no-verify", is_flag=True, help="Skip restoring the copy into a scratch "
              "folder and comparing (SQLite).")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest summary as JSON.")
def backup(path: Path, data_dir: Path | None, no_verify: bool, as_json: bool) -> None:
    """Copy the hub's database and data folder into the new folder PATH, safely while
    the hub serves (SQLite: the online backup API; PostgreSQL: pg_dump). The copy is then
    restored into a scratch folder and compared, unless --no-verify.

    \b
    Example:
      tickethub backup /var/backups/tickethub/$(date +%F)
    """
    from tickethub.ops.backup import backup as take

    manifest = take(_settings(data_dir), path, verify_copy=not no_verify)
    if as_json:
        click.echo(json.dumps(_summary(manifest), indent=2))
        return
    rows = sum(manifest.tables.values())
    what = f"{rows} rows in {len(manifest.tables)} tables, " if manifest.tables else ""
    click.echo(f"backed up to {path}: {manifest.dialect} at {manifest.revision}, "
               f"{what}{len(manifest.files)} files"
               + ("" if no_verify or manifest.dialect != "sqlite" else "; verified"))


@click.command("restore")
@click.argument("path", type=click.Path(path_type=Path, exists=True, file_okay=False))
@_DATA_DIR
@click.option("--force", is_flag=True, help="Replace a hub already in the target.")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest summary as JSON.")
def restore(path: Path, data_dir: Path | None, force: bool, as_json: bool) -> None:
    """Restore the backup folder PATH into the configured database and data folder
    (stop the hub first), and check it against the backup's manifest.

    \b
    Example:
      tickethub restore /var/backups/tickethub/2026-11-23 --data-dir /srv/tickethub/data
    """
    from tickethub.ops.backup import restore as put_back

    manifest = put_back(_settings(data_dir), path, force=force)
    if as_json:
        click.echo(json.dumps(_summary(manifest), indent=2))
        return
    click.echo(f"restored {path}: {manifest.dialect} at {manifest.revision}, "
               f"{len(manifest.files)} files; start the hub with `tickethub serve`")


@click.command("doctor")
@_DATA_DIR
@click.option("--json", "as_json", is_flag=True, help="Print the findings as a JSON list.")
@click.option("--all", "show_all", is_flag=True, help="Also print what is fine.")
def doctor(data_dir: Path | None, as_json: bool, show_all: bool) -> None:
    """Check the settings, the database and its migrations (on PostgreSQL also this
    machine's clock against the server's), the public URL and every configured
    channel's credentials (GitHub token scopes, SMTP and IMAP logins, Matrix login).
    Prints what is wrong, one line each; exits 1 when anything is a problem
    (warnings alone exit 0). Changes nothing.
    """
    from tickethub.ops.doctor import OK, PROBLEM, run

    overrides: dict[str, Any] = {"data_dir": data_dir} if data_dir else {}
    findings = run(None, **overrides)
    problems = [f for f in findings if f.level == PROBLEM]
    if as_json:
        click.echo(json.dumps([f.as_json() for f in findings], indent=2))
    else:
        shown = [f for f in findings if show_all or f.level != OK]
        for finding in shown:
            click.echo(finding.line(), err=finding.level == PROBLEM)
        if not problems:
            click.echo(f"no problems ({len(findings)} checks)")
    if problems:
        raise SystemExit(1)


COMMANDS = (backup, restore, doctor)
