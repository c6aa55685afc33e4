"""``tickethub ask`` and ``tickethub wait``: open a ticket, block until a person answers."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tickethub.cli import output
from tickethub.cli.options import json_file, json_flag, parse_json, parse_refs, parse_when, with_hub
from tickethub.sdk import Hub, Ticket

KINDS = click.Choice(["question", "approval", "task", "info"])


def _wait(hub: Hub, ticket_id: int, timeout: float | None, as_json: bool) -> None:
    """Wait, print how the ticket ended, and exit with its outcome code."""
    ctx = click.get_current_context()
    try:
        ticket = hub.wait(ticket_id, timeout=timeout)
    except KeyboardInterrupt:
        click.echo(f"stopped waiting; ticket #{ticket_id} stays open "
                   f"(tickethub wait {ticket_id} to go on)", err=True)
        ctx.exit(output.INTERRUPTED)
    _finish(ticket, as_json)


def _finish(ticket: Ticket, as_json: bool) -> None:
    """Print how a waited-on ticket ended and exit with its outcome code."""
    if as_json:
        output.echo_json(ticket)
    else:
        click.echo(output.answer_text(ticket))
        if not ticket.waiting and ticket.outcome not in ("answered", "approved", "done"):
            click.echo(f"ticket #{ticket.id} {ticket.outcome}", err=True)
    click.get_current_context().exit(output.outcome_code(ticket))


@click.command()
@click.argument("title")
@click.option("--body", "-b", default="", help="Details. '-' reads them from stdin.")
@click.option("--kind", "-k", type=KINDS, default="question", show_default=True)
@click.option("--label", "-l", "labels", multiple=True, help="A label (repeatable).")
@click.option("--parent", "parent_id", type=int, help="Parent ticket id.")
@click.option("--assignee", help="Who should answer.")
@click.option("--due", help="Expire unanswered after 30m, 2h, 1d, or at an ISO 8601 time.")
@click.option("--schema", type=click.Path(path_type=Path, dir_okay=False),
              help="JSON Schema file that a structured answer must satisfy.")
@click.option("--proposal", help="For approvals: the proposed action, as JSON.")
@click.option("--ref", "refs", multiple=True, metavar="NAME=VALUE",
              help="A link to the outside (repeatable).")
@click.option("--idempotency-key", help="Retrying with the same key never makes two tickets.")
@click.option("--wait", "-w", "wait_", is_flag=True,
              help="Block until answered; print the answer; exit code tells the outcome.")
@click.option("--timeout", type=float, help="With --wait: give up after this many seconds.")
@click.option("--quiet", "-q", is_flag=True, help="Without --wait: print only the id.")
@json_flag
@with_hub
def ask(hub: Hub, title: str, body: str, kind: str, labels: tuple[str, ...],
        parent_id: int | None, assignee: str | None, due: str | None, schema: Path | None,
        proposal: str | None, refs: tuple[str, ...], idempotency_key: str | None,
        wait_: bool, timeout: float | None, quiet: bool, as_json: bool) -> None:
    """Open a ticket; with --wait, block until a person answers.

    \b
    Examples:
      tickethub ask "Which region should the cluster run in?" --wait
      tickethub ask "Deploy v2 to prod?" --kind approval --due 30m --wait
      id=$(tickethub ask "Review the report" --kind task -q)

    With --wait, the answer text (then its data as JSON) goes to stdout and the exit code
    tells the outcome: 0 answered/approved/done, 10 denied, 11 expired, 12 cancelled,
    13 still waiting after --timeout.
    """
    if body == "-":
        body = sys.stdin.read()
    ticket = hub.ask(
        title, body, kind, labels=labels, parent_id=parent_id, assignee=assignee,
        due_at=parse_when(due, "due") if due else None,
        response_schema=json_file(schema, "schema") if schema else None,
        proposal=parse_json(proposal, "proposal") if proposal is not None else None,
        refs=parse_refs(refs), idempotency_key=idempotency_key)
    if wait_:
        if not as_json:
            click.echo(f"asked #{ticket.id}, waiting for an answer: {ticket.html_url}", err=True)
        _wait(hub, ticket.id, timeout, as_json)
    if as_json:
        output.echo_json(ticket)
    elif quiet:
        click.echo(str(ticket.id))
    else:
        click.echo(f"asked #{ticket.id} ({ticket.kind}, {ticket.status}): {ticket.html_url}")


@click.command()
@click.argument("ticket_id", type=int)
@click.option("--timeout", type=float, help="Give up after this many seconds.")
@json_flag
@with_hub
def wait(hub: Hub, ticket_id: int, timeout: float | None, as_json: bool) -> None:
    """Block until a ticket is resolved; print the answer.

    Rides out hub restarts. Exit codes as for `ask --wait`.

    \b
    Example:
      tickethub wait 12 --timeout 600 && echo "go on"
    """
    _wait(hub, ticket_id, timeout, as_json)
