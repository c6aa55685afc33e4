"""The issue tree as data: the JSON shape the scoring command reads, and Markdown.

JSON: ``{"issues": [{"id", "parent_id", "kind", "status", "title", "source_message_id",
"history": [{"message_id", "op", "new_status"}]}]}`` — ``source_message_id`` is the
Message-ID of the mail that raised the issue, ``op`` one of add, answer, complete,
status (undone operations are left out). Issues come parents first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tickethub.domain.tickets import Ticket, TicketQuery
from tickethub.mail.apply import VIA
from tickethub.services.tickets import MAX_TREE_DEPTH, TicketService

HISTORY_OPS = ("add", "answer", "complete", "status")


def tree_tickets(tickets: TicketService, root_id: int | None) -> list[Ticket]:
    """The root and its subtree, or without a root every ticket the mail pipeline made."""
    if root_id is not None:
        return tickets.subtree(root_id, MAX_TREE_DEPTH)
    found: list[Ticket] = []
    after: int | None = None
    while True:
        page = tickets.list(TicketQuery(created_by="mail", after=after, limit=200))
        found.extend(page.items)
        if page.next_cursor is None:
            break
        after = int(page.next_cursor)
    return sorted(found, key=lambda t: (t.path.count("/"), t.id))


def export_tree(tickets: TicketService, root_id: int | None = None) -> dict[str, Any]:
    """The tree in the JSON shape above, read through the ticket service."""
    return tree_json((t, tickets.messages(t.id)) for t in tree_tickets(tickets, root_id))


def tree_json(pairs: Iterable[tuple[Any, Sequence[Any]]]) -> dict[str, Any]:
    """The JSON shape from ``(ticket, its messages)`` pairs, parents first. Works with the
    domain's ``Ticket``/``Message`` and with the SDK's models alike (it reads ``id``,
    ``parent_id``, ``kind``, ``status``, ``title``, ``refs``; ``via``, ``external_id``,
    ``data``), so ``tickethub tree`` can build it from a running hub:
    ``tree_json((t, hub.messages(t.id)) for _, t in hub.tree(root, 32).walk())``."""
    issues = []
    for ticket, messages in pairs:
        undone = {m.data.get("undoes") for m in messages
                  if m.via == VIA and isinstance(m.data, dict) and m.data.get("op") == "undo"}
        history = []
        for message in messages:
            data = message.data if isinstance(message.data, dict) else {}
            if message.via != VIA or data.get("op") not in HISTORY_OPS or \
                    message.external_id in undone:
                continue
            history.append({"message_id": data.get("message_id"), "op": data["op"],
                            "new_status": data.get("new_status")})
        issues.append({
            "id": ticket.id, "parent_id": ticket.parent_id, "kind": _value(ticket.kind),
            "status": _value(ticket.status), "title": ticket.title,
            "source_message_id": (ticket.refs or {}).get("email"), "history": history,
        })
    return {"issues": issues}


def _value(field: Any) -> str:
    return str(getattr(field, "value", field))


def tree_markdown(tree: dict[str, Any]) -> str:
    """An indented Markdown list: status, kind, title, id, and how many mails changed it."""
    issues = tree["issues"]
    ids = {i["id"] for i in issues}
    children: dict[int | None, list[dict[str, Any]]] = {}
    for issue in issues:
        parent = issue["parent_id"] if issue["parent_id"] in ids else None
        children.setdefault(parent, []).append(issue)
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for issue in children.get(parent, []):
            box = "x" if issue["status"] in ("done", "answered", "cancelled") else " "
            changes = len([h for h in issue["history"] if h["op"] != "add"])
            lines.append(f"{'  ' * depth}- [{box}] **{issue['title']}** — {issue['kind']}, "
                         f"{issue['status']} (#{issue['id']}"
                         + (f", {changes} update{'s' if changes != 1 else ''})" if changes
                            else ")"))
            if depth < MAX_TREE_DEPTH:
                walk(issue["id"], depth + 1)

    walk(None, 0)
    return "\n".join(lines) + ("\n" if lines else "")
