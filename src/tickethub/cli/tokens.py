"""``tickethub token``: admins create, list and revoke API tokens."""

from __future__ import annotations

import click

from tickethub.cli import output
from tickethub.cli.options import json_flag, with_hub
from tickethub.sdk import Hub


@click.group(cls=output.Group)
def token() -> None:
    """Manage API tokens (needs an admin token)."""


@token.command()
@click.option("--role", "-r", required=True,
              type=click.Choice(["agent", "responder", "admin"]),
              help="agent: asks and waits; responder: answers and approves; admin: all.")
@click.option("--name", "-n", required=True, help="Who the token is for (an actor name).")
@click.option("--scope", "scopes", multiple=True, metavar="SCOPE",
              help="Add to what the role allows (repeatable). read:all: an agent reads "
                   "every ticket, message and event, not only its own tree and what is "
                   "assigned to it.")
@with_hub
def create(hub: Hub, role: str, name: str, scopes: tuple[str, ...]) -> None:
    """Create a token and print it (it is shown only this once).

    \b
    Example:
      export TICKETHUB_TOKEN=$(tickethub token create --role agent --name build-bot)
      tickethub token create --role agent --name auditor --scope read:all
    """
    click.echo(hub.create_token(role, name, scopes))


@token.command(name="list")
@json_flag
@with_hub
def list_(hub: Hub, as_json: bool) -> None:
    """List tokens (never their secrets).

    \b
    Example:
      tickethub token list
    """
    tokens = hub.tokens()
    if as_json:
        output.echo_json(tokens)
        return
    for info in tokens:
        click.echo(output.token_row(info))


@token.command()
@click.argument("token_id", type=int)
@with_hub
def revoke(hub: Hub, token_id: int) -> None:
    """Revoke a token by its id (from `token list`); it stops working at once.

    \b
    Example:
      tickethub token revoke 3
    """
    hub.revoke_token(token_id)
    click.echo(f"revoked token {token_id}")
