"""Read commands: list, show, tree, and watch (live events)."""

from __future__ import annotations

import itertools

import click

from tickethub.cli import output
from tickethub.cli.options import json_flag, with_hub
from tickethub.sdk import Hub

STATUSES = click.Choice(["open", "in_progress", "deferred", "answered", "approved", "denied",
                         "done", "cancelled", "expired"])


@click.command(name="list")
@click.option("--status", "-s", type=STATUSES, multiple=True, help="Repeat for several.")
@click.option("--kind", "-k", type=click.Choice(["question", "approval", "task", "info"]))
@click.option("--label", "-l", help="Only tickets with this label.")
@click.option("--assignee", help="Only tickets assigned to this name.")
@click.option("--parent", "parent_id", type=int, help="Only children of this ticket.")
@click.option("--created-by", help="Only tickets this actor opened.")
@click.option("--search", "-q", "q", help="Words in the title, body or messages.")
@click.option("--limit", "-n", type=click.IntRange(min=1), default=50, show_default=True,
              help="At most this many tickets.")
@click.option("--all", "all_", is_flag=True, help="Every matching ticket (ignores --limit).")
@json_flag
@with_hub
def list_(hub: Hub, status: tuple[str, ...], kind: str | None, label: str | None,
          assignee: str | None, parent_id: int | None, created_by: str | None,
          q: str | None, limit: int, all_: bool, as_json: bool) -> None:
    """List tickets, newest first.

    \b
    Examples:
      tickethub list --status open --kind approval
      tickethub list -q "invoice" --json
    """
    tickets = hub.list(status=status or None, kind=kind, label=label, assignee=assignee,
                       parent_id=parent_id, created_by=created_by, q=q,
                       limit=200 if all_ else min(limit, 200))
    chosen = tickets if all_ else itertools.islice(tickets, limit)
    if as_json:
        output.echo_json(list(chosen))
    else:
        output.echo_rows(chosen)


@click.command()
@click.argument("ticket_id", type=int)
@json_flag
@with_hub
def show(hub: Hub, ticket_id: int, as_json: bool) -> None:
    """Show a ticket with its answer and messages.

    \b
    Example:
      tickethub show 12
    """
    ticket = hub.get(ticket_id)
    messages = hub.messages(ticket_id)
    if as_json:
        output.echo_json({"ticket": ticket, "messages": messages})
    else:
        click.echo(output.ticket_detail(ticket, messages))


@click.command()
@click.argument("ticket_id", type=int)
@click.option("--depth", "-d", type=click.IntRange(0, 32), default=3, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]),
              default="text", show_default=True,
              help="markdown: a checklist; json: the issue-tree export "
                   '{"issues": [{"id", "parent_id", "kind", "status", "title", '
                   '"source_message_id", "history": [...]}]}.')
@json_flag
@with_hub
def tree(hub: Hub, ticket_id: int, depth: int, fmt: str, as_json: bool) -> None:
    """Show a ticket and its sub-tickets as a tree.

    --json prints the nested tickets as the API returns them; --format json prints the
    flat issue-tree export (the shape the mail scoring command reads).

    \b
    Examples:
      tickethub tree 1 --depth 2
      tickethub tree 1 --depth 32 --format markdown
    """
    node = hub.tree(ticket_id, depth)
    if as_json:
        output.echo_json(node)
    elif fmt == "text":
        click.echo(output.tree_text(node))
    else:
        from tickethub.mail.tree import tree_json, tree_markdown

        export = tree_json((t, hub.messages(t.id)) for _, t in node.walk())
        if fmt == "json":
            output.echo_json(export)
        else:
            click.echo(tree_markdown(export))


@click.command()
@click.option("--ticket", "ticket_id", type=int, help="Only events of this ticket.")
@click.option("--subtree", type=int, help="Only events of this ticket and its descendants.")
@click.option("--since", type=click.IntRange(min=0),
              help="Start after this event seq (default: from now).")
@click.option("--count", type=click.IntRange(min=1), help="Stop after this many events.")
@json_flag
@with_hub
def watch(hub: Hub, ticket_id: int | None, subtree: int | None, since: int | None,
          count: int | None, as_json: bool) -> None:
    """Print events as they happen (Server-Sent Events), until Ctrl-C.

    Reconnects by itself when the hub restarts, without missing events. With --json, one
    JSON object per line.

    \b
    Examples:
      tickethub watch
      tickethub watch --subtree 1 --json | jq .type
    """
    events = hub.stream_events(since=since, ticket_id=ticket_id, subtree=subtree)
    try:
        for event in itertools.islice(events, count):
            if as_json:
                output.echo_json(event, compact=True)
            else:
                click.echo(output.event_line(event))
    except KeyboardInterrupt:
        pass
    finally:
        events.close()  # type: ignore[attr-defined]


COMMANDS = [list_, show, tree, watch]
