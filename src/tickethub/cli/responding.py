"""Commands that act on a ticket: answer, approve, deny, post, and status moves
(transition, start, done, cancel, defer, reopen), assign and label."""

from __future__ import annotations

import click

from tickethub.cli import output
from tickethub.cli.options import json_flag, parse_json, parse_when, with_hub
from tickethub.sdk import Hub, Ticket


def _report(ticket: Ticket, as_json: bool) -> None:
    if as_json:
        output.echo_json(ticket)
    else:
        click.echo(f"#{ticket.id} is {ticket.status}: {ticket.title}")


@click.command()
@click.argument("ticket_id", type=int)
@click.argument("text", required=False)
@click.option("--data", help="Structured answer as JSON; must fit the ticket's schema.")
@json_flag
@with_hub
def answer(hub: Hub, ticket_id: int, text: str | None, data: str | None, as_json: bool
           ) -> None:
    """Answer a question, task or info ticket.

    \b
    Examples:
      tickethub answer 12 "eu-west-1"
      tickethub answer 12 --data '{"region": "eu-west-1", "replicas": 3}'
    """
    if text is None and data is None:
        output.bad_input("give the answer TEXT, --data, or both", "missing_answer", "text")
    value = parse_json(data, "data") if data is not None else None
    _report(hub.answer(ticket_id, text, value), as_json)


@click.command()
@click.argument("ticket_id", type=int)
@click.option("--comment", "-m", help="Why, or what to watch out for.")
@click.option("--edited", help="An edited version of the proposal, as JSON.")
@json_flag
@with_hub
def approve(hub: Hub, ticket_id: int, comment: str | None, edited: str | None,
            as_json: bool) -> None:
    """Approve an approval ticket (optionally with an edited proposal).

    \b
    Examples:
      tickethub approve 7 -m "go ahead, watch the error rate"
      tickethub approve 7 --edited '{"replicas": 2}'
    """
    value = parse_json(edited, "edited") if edited is not None else None
    _report(hub.approve(ticket_id, comment, value), as_json)


@click.command()
@click.argument("ticket_id", type=int)
@click.option("--reason", "-m", help="Why not.")
@json_flag
@with_hub
def deny(hub: Hub, ticket_id: int, reason: str | None, as_json: bool) -> None:
    """Deny an approval ticket.

    \b
    Example:
      tickethub deny 7 --reason "not during the freeze"
    """
    _report(hub.deny(ticket_id, reason), as_json)


@click.command()
@click.argument("ticket_id", type=int)
@click.argument("text")
@click.option("--data", help="Structured data as JSON to attach.")
@json_flag
@with_hub
def post(hub: Hub, ticket_id: int, text: str, data: str | None, as_json: bool) -> None:
    """Post a message on a ticket (a comment; it does not answer it).

    \b
    Example:
      tickethub post 12 "looking into it, back in an hour"
    """
    value = parse_json(data, "data") if data is not None else None
    message = hub.post(ticket_id, text, value)
    if as_json:
        output.echo_json(message)
    else:
        click.echo(f"posted message {message.id} on #{ticket_id}")


def _move(hub: Hub, ticket_id: int, to: str, until: str | None, reason: str | None,
          as_json: bool) -> None:
    when = parse_when(until, "until") if until else None
    _report(hub.transition(ticket_id, to, when, reason), as_json)


@click.command()
@click.argument("ticket_id", type=int)
@click.argument("to", type=click.Choice(["open", "in_progress", "deferred", "done",
                                         "cancelled"]))
@click.option("--until", help="For deferred: 30m, 2h, 1d or an ISO 8601 time.")
@click.option("--reason", "-m", help="Why (kept on the ticket).")
@json_flag
@with_hub
def transition(hub: Hub, ticket_id: int, to: str, until: str | None, reason: str | None,
               as_json: bool) -> None:
    """Move a ticket to another status (open reopens it).

    \b
    Example:
      tickethub transition 12 in_progress
    """
    _move(hub, ticket_id, to, until, reason, as_json)


def _shortcut(name: str, to: str, summary: str, needs_until: bool = False) -> click.Command:
    @click.command(name=name, help=f"{summary}\n\n\b\nExample:\n  tickethub {name} 12"
                   + (" --until 2h" if needs_until else ""))
    @click.argument("ticket_id", type=int)
    @click.option("--until", required=needs_until, hidden=not needs_until,
                  help="When the ticket comes back: 30m, 2h, 1d or an ISO 8601 time.")
    @click.option("--reason", "-m", help="Why (kept on the ticket).")
    @json_flag
    @with_hub
    def command(hub: Hub, ticket_id: int, until: str | None, reason: str | None,
                as_json: bool) -> None:
        _move(hub, ticket_id, to, until, reason, as_json)

    return command


start = _shortcut("start", "in_progress", "Mark a ticket as in progress.")
done = _shortcut("done", "done", "Close a ticket as done.")
cancel = _shortcut("cancel", "cancelled", "Cancel a ticket (a waiting agent wakes).")
defer = _shortcut("defer", "deferred", "Put a ticket aside until a time.", needs_until=True)
reopen = _shortcut("reopen", "open", "Reopen a resolved ticket.")


@click.command()
@click.argument("ticket_id", type=int)
@click.argument("who", required=False)
@json_flag
@with_hub
def assign(hub: Hub, ticket_id: int, who: str | None, as_json: bool) -> None:
    """Assign a ticket to someone (no WHO: unassign).

    \b
    Example:
      tickethub assign 12 alice
    """
    _report(hub.assign(ticket_id, who), as_json)


@click.command()
@click.argument("ticket_id", type=int)
@click.option("--add", "-a", multiple=True, help="A label to add (repeatable).")
@click.option("--remove", "-r", multiple=True, help="A label to remove (repeatable).")
@json_flag
@with_hub
def label(hub: Hub, ticket_id: int, add: tuple[str, ...], remove: tuple[str, ...],
          as_json: bool) -> None:
    """Add and remove labels.

    \b
    Example:
      tickethub label 12 --add urgent --remove later
    """
    _report(hub.label(ticket_id, add, remove), as_json)


COMMANDS = [answer, approve, deny, post, transition, start, done, cancel, defer, reopen,
            assign, label]
