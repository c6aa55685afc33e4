"""``tickethub github ...``: connect repositories, check the token, import issues and
show the sync state — on the hub's own database, with the same settings as ``serve``
(TICKETHUB_DATABASE_URL or SQLite in the data folder; TICKETHUB_GITHUB_TOKEN and
TICKETHUB_GITHUB_API_URL for the commands that call GitHub).

\b
  tickethub github connect octo-org/app --label github      # route tickets labelled github
  tickethub github connect octo-org/app --kind approval --poll
  tickethub github check octo-org/app                        # what the token may do
  tickethub github import octo-org/app --label agent-task    # issues -> tickets, kept in sync
  tickethub github status                                    # connections, links, queues
  tickethub github disconnect octo-org/app
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import click

from tickethub.cli import output
from tickethub.cli.local import local_runtime

if TYPE_CHECKING:
    from tickethub.channels.github import GithubChannel
    from tickethub.server.runtime import HubRuntime


def _channel(runtime: HubRuntime, calls_github: bool) -> GithubChannel:
    if runtime.github is not None:
        return runtime.github  # type: ignore[no-any-return]
    if calls_github:
        raise output.Failure("set TICKETHUB_GITHUB_TOKEN (or the GitHub App settings) first",
                             "github_not_configured", "TICKETHUB_GITHUB_TOKEN", output.INVALID)
    from tickethub.channels.github import install

    # state-only commands work without a token: the client is built but never called
    return install(runtime, token="unused", register=False)


def _error(exc: Exception) -> output.Failure:
    return output.Failure(str(exc), "github_error", None, output.UNAVAILABLE)


_data_dir = click.option("--data-dir", type=click.Path(path_type=Path), default=None,
                         help="The hub's data folder [default: ./data].")
_json = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


@click.group()
def github() -> None:
    """Mirror tickets to GitHub issues and take answers from their comments."""


@github.command()
@click.argument("repo")
@click.option("--label", "labels", multiple=True, help="Route tickets with this label "
              "(repeatable; any matches).")
@click.option("--kind", "kinds", multiple=True,
              type=click.Choice(["question", "approval", "task", "info"]),
              help="Route tickets of this kind (repeatable).")
@click.option("--parent", "parent_id", type=int, default=None,
              help="Route this ticket and everything below it.")
@click.option("--all", "match_all", is_flag=True, help="Route every ticket here.")
@click.option("--poll", is_flag=True, help="Poll for comments (hubs without a public URL).")
@click.option("--import-label", default=None,
              help="Issues with this label become tickets when their webhook arrives.")
@_data_dir
def connect(repo: str, labels: tuple[str, ...], kinds: tuple[str, ...],
            parent_id: int | None, match_all: bool, poll: bool, import_label: str | None,
            data_dir: Path | None) -> None:
    """Connect REPO (owner/name), or change its routing rule."""
    from tickethub.domain.actors import SYSTEM

    with local_runtime(data_dir) as runtime:
        conn = _channel(runtime, False).sync.connect(
            SYSTEM, repo, labels=labels, kinds=kinds, parent_id=parent_id,
            match_all=match_all, import_label=import_label, poll=poll)
        click.echo(f"connected {conn.full_name}: {_rule(conn)}")
        if not (conn.match_all or conn.labels or conn.kinds or conn.parent_id):
            click.echo("note: no rule yet, so no ticket goes out by itself "
                       "(use --label, --kind, --parent or --all)", err=True)


@github.command()
@click.argument("repo")
@_data_dir
def disconnect(repo: str, data_dir: Path | None) -> None:
    """Stop routing tickets to REPO (links to issues already made are kept)."""
    from tickethub.domain.actors import SYSTEM

    with local_runtime(data_dir) as runtime:
        _channel(runtime, False).sync.disconnect(SYSTEM, repo)
        click.echo(f"disconnected {repo.lower()}")


@github.command()
@click.argument("repos", nargs=-1)
@_json
@_data_dir
def check(repos: tuple[str, ...], as_json: bool, data_dir: Path | None) -> None:
    """Show who the token is and whether it may write issues in REPOS (default: the
    connected ones)."""
    from tickethub.channels.github.client import GitHubError

    with local_runtime(data_dir) as runtime:
        channel = _channel(runtime, True)
        names = list(repos) or [c.full_name for c in channel.sync.connections()]

        async def probe() -> dict[str, Any]:
            me = await channel.gateway.me()
            report: dict[str, Any] = {"login": me.get("login"), "scopes": me.get("scopes"),
                                      "rate_remaining": me.get("rate_remaining"),
                                      "api_url": runtime.settings.github_api_url,
                                      "repos": {}}
            for name in names:
                try:
                    perms = (await channel.gateway.repository(name)).get("permissions") or {}
                    report["repos"][name] = {
                        "issues_write": bool(perms.get("push") or perms.get("triage")
                                             or perms.get("admin")),
                        "admin": bool(perms.get("admin")), "permissions": perms}
                except GitHubError as exc:
                    report["repos"][name] = {"error": str(exc)}
            return report

        try:
            report = asyncio.run(probe())
        except GitHubError as exc:
            raise _error(exc) from exc
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(f"token user: {report['login']}  scopes: {report['scopes'] or '-'}  "
               f"rate limit left: {report['rate_remaining'] or '-'}  ({report['api_url']})")
    for name, info in report["repos"].items():
        if "error" in info:
            click.echo(f"  {name}: cannot read it ({info['error']})")
        else:
            may = "can" if info["issues_write"] else "CANNOT"
            click.echo(f"  {name}: {may} open and comment on issues"
                       f"{'; admin' if info['admin'] else ''}")
    if any("error" in i or not i["issues_write"] for i in report["repos"].values()):
        raise SystemExit(output.NOT_ALLOWED)


@github.command(name="import")
@click.argument("repo")
@click.option("--label", required=True, help="Import the issues with this label.")
@_json
@_data_dir
def import_(repo: str, label: str, as_json: bool, data_dir: Path | None) -> None:
    """Turn REPO's issues labelled LABEL (with comments, labels and milestone) into
    tickets, kept in sync both ways."""
    from tickethub.channels.github.client import GitHubError
    from tickethub.domain.actors import SYSTEM

    with local_runtime(data_dir) as runtime:
        channel = _channel(runtime, True)
        try:
            report = asyncio.run(channel.importer.import_repo(SYSTEM, repo, label))
        except GitHubError as exc:
            raise _error(exc) from exc
    summary = {"created": report.created, "existing": report.existing,
               "comments": report.comments}
    click.echo(json.dumps(summary) if as_json else
               f"imported {report.created} new, {report.existing} already there, "
               f"{report.comments} comments")


class _ConnectionStatus(TypedDict):
    """One connected repository in ``github status --json``."""

    repo: str
    rule: str
    poll: bool
    import_label: str | None
    poll_since: str | None
    next_poll_at: str | None  # ISO 8601
    issues: dict[str, int]  # linked issues by state


class _Status(TypedDict):
    """What ``github status --json`` prints; counts are by state (or status)."""

    connections: list[_ConnectionStatus]
    webhook_inbox: dict[str, int]
    outbound_deliveries: dict[str, int]


@github.command()
@_json
@_data_dir
def status(as_json: bool, data_dir: Path | None) -> None:
    """Connections with their rules and polling cursors, links, and the queues."""
    with local_runtime(data_dir) as runtime:
        channel = _channel(runtime, False)
        links = Counter((link.repo, link.state) for link in channel.sync.links())
        deliveries = Counter(d.status for d in runtime.deliveries.list("github", None, 10000))
        state: _Status = {
            "connections": [{
                "repo": c.full_name, "rule": _rule(c), "poll": c.poll,
                "import_label": c.import_label, "poll_since": c.poll_since,
                "next_poll_at": c.next_poll_at.isoformat() if c.next_poll_at else None,
                "issues": {s: n for (r, s), n in links.items() if r == c.full_name},
            } for c in channel.sync.connections()],
            "webhook_inbox": channel.sync.inbox_counts(),
            "outbound_deliveries": dict(deliveries),
        }
    if as_json:
        click.echo(json.dumps(state, indent=2))
        return
    if not state["connections"]:
        click.echo("no repository connected (tickethub github connect OWNER/REPO ...)")
    for c in state["connections"]:
        issues = ", ".join(f"{n} {s}" for s, n in sorted(c["issues"].items())) or "none"
        polling = f"; polls, next {c['next_poll_at'] or 'now'}" if c["poll"] else ""
        click.echo(f"{c['repo']}: {c['rule']}; issues: {issues}{polling}")
    inbox = ", ".join(f"{n} {s}" for s, n in sorted(state["webhook_inbox"].items()))
    out = ", ".join(f"{n} {s}" for s, n in sorted(state["outbound_deliveries"].items()))
    click.echo(f"webhook inbox: {inbox or 'empty'}")
    click.echo(f"outbound deliveries: {out or 'none'}")


def _rule(conn: Any) -> str:
    if conn.match_all:
        return "every ticket"
    parts = []
    if conn.labels:
        parts.append("label " + " or ".join(conn.labels))
    if conn.kinds:
        parts.append("kind " + " or ".join(conn.kinds))
    if conn.parent_id is not None:
        parts.append(f"under ticket {conn.parent_id}")
    return " and ".join(parts) or "no rule"
