"""What the hub writes on GitHub: issue bodies, the status comment, mirrored messages
and replies. Each carries a hidden marker ``<!-- tickethub:KEY -->``: the inbound side
ignores comments that have one (they are the hub's own), and a write retried after a
crash finds the object it already made by its marker instead of making a second one."""

from __future__ import annotations

import hashlib

from tickethub.channels.github.commands import HELP
from tickethub.domain.messages import Message
from tickethub.domain.status import Kind
from tickethub.domain.tickets import Ticket

MARKER_PREFIX = "<!-- tickethub:"


def marker(key: str) -> str:
    return f"{MARKER_PREFIX}{key} -->"


def has_marker(body: str | None) -> bool:
    return bool(body) and MARKER_PREFIX in (body or "")


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def issue_key(ticket_id: int) -> str:
    return f"issue:{ticket_id}"


def issue_body(ticket: Ticket, link_back: str) -> str:
    how = {
        Kind.QUESTION: "Answer with a comment, or `/answer <text>`.",
        Kind.APPROVAL: "Decide with `/approve [comment]` or `/deny <reason>`.",
        Kind.TASK: "Close it with `/done`, or `/answer <result>`.",
        Kind.INFO: "Acknowledge with `/done`.",
    }[ticket.kind]
    parts = [ticket.body.strip() or "_(no description)_", ""]
    if ticket.proposal is not None:
        parts += ["Proposal:", "```json", _json(ticket.proposal), "```", ""]
    parts += [
        "---",
        f"tickethub {ticket.kind.value} [#{ticket.id}]({link_back}) from `{ticket.created_by}`."
        f" {how} Only people with write access steer the agent.",
        marker(issue_key(ticket.id)),
    ]
    return "\n".join(parts)


def status_body(ticket: Ticket) -> str:
    rows = [
        ("status", f"**{ticket.status.value}**"),
        ("kind", ticket.kind.value),
        ("assignee", ticket.assignee or "—"),
        ("labels", ", ".join(ticket.labels) or "—"),
    ]
    if ticket.next_attention_at is not None:
        rows.append(("deferred until", ticket.next_attention_at.isoformat()))
    if ticket.due_at is not None:
        rows.append(("due", ticket.due_at.isoformat()))
    if ticket.answer is not None:
        rows.append(("decided by", f"`{ticket.answer.by}` via {ticket.answer.via}"))
        if ticket.answer.text:
            rows.append(("answer", ticket.answer.text.replace("\n", " ")[:500]))
    table = "\n".join(f"| {k} | {v} |" for k, v in rows)
    return (f"#### tickethub status\n| | |\n|---|---|\n{table}\n\n"
            f"<sub>This comment is kept up to date by tickethub.</sub>\n"
            f"{marker(f'status:{ticket.id}')}")


def message_body(message: Message, key: str) -> str:
    trust = "" if message.trusted else " _(unverified)_"
    return (f"**{message.author}** via {message.via}{trust}:\n\n{message.body}\n\n"
            f"{marker(f'msg:{key}')}")


def unknown_command_reply(name: str, key: str) -> str:
    return f"`/{name}` is not a command I know.\n\n{HELP}\n\n{marker(key)}"


def rejected_reply(command: str, detail: str, key: str) -> str:
    return f"`/{command}` was not applied: {detail}\n\n{marker(key)}"


def edited_after_answer_reply(login: str, key: str) -> str:
    return (f"@{login} edited a comment whose answer the agent already received. The edit "
            "is recorded on the ticket but does not change the answer; use `/reopen` and "
            f"answer again to change it.\n\n{marker(key)}")


def failed_delivery_note(login: str, what: str, url: str, hours: float,
                         github_down: bool) -> str:
    """The note for someone whose comment (or issue change) the hub gave up on."""
    why = ("GitHub's API kept failing while the hub checked it" if github_down
           else "processing it kept failing")
    where = f" ({url})" if url else ""
    return (f"@{login}, your {what}{where} could not be processed: {why} for the "
            f"{hours:g} h the hub kept trying. It has not changed this ticket; please "
            "post it again.")


def _json(value: object) -> str:
    import json

    return json.dumps(value, indent=2, sort_keys=True, default=str)[:4000]
