"""``tickethub user ...``: people who sign in to the web inbox.

These commands work on the hub's database directly (same settings as ``serve``), so an
operator can set the first password before anyone has a token.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tickethub.cli.output import Failure
from tickethub.domain.actors import Role
from tickethub.errors import TickethubError


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
    from tickethub.server.runtime import HubRuntime
    from tickethub.settings import Settings

    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    settings = Settings(data_dir=data_dir) if data_dir else Settings()
    hub = HubRuntime(settings)
    try:
        actor = hub.sessions.set_password(name, password, Role(role))
    except TickethubError as exc:
        raise Failure.of(exc) from None
    finally:
        hub.close()
    click.echo(f"{actor.name} ({actor.role}) can now sign in at {hub.public_url('/login')}")
