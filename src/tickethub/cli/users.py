"""``tickethub user ...``: people who sign in to the web inbox.

These commands work on the hub's database directly (same settings as ``serve``), so an
operator can set the first password before anyone has a token.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tickethub.cli.local import local_runtime
from tickethub.domain.actors import Role


@click.group("user")
def user() -> None:
    """People who sign in to the web inbox."""


@user.command("set-password")
@click.argument("name")
@click.option("--role", type=click.Choice([r.value for r in Role]), default="responder",
              show_default=True, help="Role for a new person (an existing one keeps theirs).")
@click.option("--password-stdin", is_flag=True,
              help="Read the password from the first line of stdin instead of prompting.")
@click.option("--data-dir", type=click.Path(path_type=Path), default=None,
              help="Folder of the hub's database [default: ./data].")
def set_password(name: str, role: str, password_stdin: bool, data_dir: Path | None) -> None:
    """Set NAME's web sign-in password (creating the person if needed)."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    with local_runtime(data_dir) as hub:
        actor = hub.sessions.set_password(name, password, Role(role))
    click.echo(f"{actor.name} ({actor.role}) can now sign in at {hub.public_url('/login')}")


@user.command("login-link")
@click.argument("name")
@click.option("--minutes", type=float, default=15, show_default=True,
              help="How long the link works (it works once).")
@click.option("--next", "next_path", default="/", show_default=True,
              help="The page to open after signing in, e.g. /t/42.")
@click.option("--data-dir", type=click.Path(path_type=Path), default=None,
              help="Folder of the hub's database [default: ./data].")
def login_link(name: str, minutes: float, next_path: str, data_dir: Path | None) -> None:
    """Print a one-time sign-in link for NAME (a person)."""
    from urllib.parse import urlencode

    with local_runtime(data_dir) as hub:
        token = hub.sessions.login_link(name, minutes * 60)
    query = urlencode({"token": token, "next": next_path})
    click.echo(hub.public_url(f"/login/link?{query}"))
