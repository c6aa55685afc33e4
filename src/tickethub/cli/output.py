"""The one place the CLI turns results into text and errors into exit codes.

Exit codes (scripts may rely on them):

====  =====================================================================
code  meaning
====  =====================================================================
0     success; for ``ask --wait`` / ``wait``: answered, approved or done
1     unexpected error
2     bad command line (unknown option, bad JSON in ``--data``, bad ``--due``)
3     not found (404)
4     not authenticated or not allowed (401, 403)
5     conflict (409: illegal transition, stale version, ...)
6     the hub refused the input (400, 413, 422)
7     the hub cannot be reached or is failing (no answer, 5xx)
10    ``--wait``: the approval was denied (also when it expired: fail-closed)
11    ``--wait``: the ticket expired unanswered
12    ``--wait``: the ticket was cancelled
13    ``--wait``: ``--timeout`` passed while the ticket still waits
130   ``--wait``: interrupted (Ctrl-C); the ticket stays open
====  =====================================================================

Errors are printed as one line on stderr: ``error: <detail> (<code>, field <field>)``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any, NoReturn

import click

from tickethub.errors import DatabaseUnavailable, TickethubError
from tickethub.sdk.errors import NO_TOKEN, HubError
from tickethub.sdk.models import Event, Message, Ticket, TokenInfo, TreeNode

OK, ERROR, USAGE = 0, 1, 2
NOT_FOUND, NOT_ALLOWED, CONFLICT, INVALID, UNAVAILABLE = 3, 4, 5, 6, 7
DENIED, EXPIRED, CANCELLED, STILL_WAITING, INTERRUPTED = 10, 11, 12, 13, 130

_BY_STATUS = {404: NOT_FOUND, 401: NOT_ALLOWED, 403: NOT_ALLOWED, 409: CONFLICT,
              400: INVALID, 413: INVALID, 422: INVALID}
_BY_OUTCOME = {"answered": OK, "approved": OK, "done": OK, "denied": DENIED,
               "expired": EXPIRED, "cancelled": CANCELLED}


def exit_code(status: int) -> int:
    """The exit code for an error with HTTP ``status`` (0: no response at all)."""
    if status == 0 or status >= 500:
        return UNAVAILABLE
    return _BY_STATUS.get(status, ERROR)


def outcome_code(ticket: Ticket) -> int:
    """The exit code of ``--wait`` for the ticket as it ended up."""
    if ticket.waiting:
        return STILL_WAITING
    return _BY_OUTCOME.get(ticket.outcome or "", ERROR)


def error_line(detail: str, code: str, field: str | None = None) -> str:
    where = f", field {field}" if field else ""
    return f"error: {detail} ({code}{where})"


class Failure(click.ClickException):
    """An error the CLI reports in one line with a mapped exit code."""

    def __init__(self, detail: str, code: str, field: str | None = None,
                 exit_code: int = ERROR) -> None:
        super().__init__(detail)
        self.line = error_line(detail, code, field)
        self.exit_code = exit_code  # type: ignore[misc]  # click reads it per instance

    @classmethod
    def of(cls, exc: HubError | TickethubError) -> Failure:
        # The SDK's hint names its keyword argument; here the way is an option.
        detail = exc.detail.replace(NO_TOKEN, "no token was given: set TICKETHUB_TOKEN or "
                                    "pass --token")
        return cls(detail, exc.code, exc.field, exit_code(exc.status))

    def show(self, file: Any = None) -> None:
        click.echo(self.line, err=True)


def bad_input(detail: str, code: str, field: str) -> NoReturn:
    """Refuse a command-line value (exit 2) before anything is sent."""
    raise Failure(detail, code, field, USAGE)


class Group(click.Group):
    """A click group whose commands report hub errors as one line and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (HubError, TickethubError) as exc:
            raise Failure.of(exc) from exc
        except DatabaseUnavailable as exc:  # a command on the database itself
            problem = exc.problem()
            raise Failure(f"the database is unavailable: {exc}", problem.code,
                          exit_code=exit_code(problem.status)) from exc


# -- JSON ---------------------------------------------------------------------------------

def _plain(value: Any) -> Any:
    if isinstance(value, Ticket):
        return value.raw
    if isinstance(value, TreeNode):
        return {"ticket": value.ticket.raw, "children": [_plain(c) for c in value.children]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def echo_json(value: Any, *, compact: bool = False) -> None:
    """Print ``value`` (SDK objects included) as JSON on stdout."""
    indent = None if compact else 2
    click.echo(json.dumps(_plain(value), indent=indent, ensure_ascii=False))


# -- text ---------------------------------------------------------------------------------

def _when(value: datetime | None) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M") if value else "-"


def ticket_row(t: Ticket) -> str:
    labels = f"  [{', '.join(t.labels)}]" if t.labels else ""
    who = f"  @{t.assignee}" if t.assignee else ""
    return f"#{t.id:<5} {t.status:<11} {t.kind:<8} {t.title}{labels}{who}"


def echo_rows(tickets: Iterable[Ticket]) -> int:
    count = 0
    for ticket in tickets:
        click.echo(ticket_row(ticket))
        count += 1
    if count == 0:
        click.echo("no tickets", err=True)
    return count


def answer_text(t: Ticket) -> str:
    """What ``--wait`` prints: the answer text, then its data as JSON."""
    if t.answer is None:
        return f"{t.status}" if not t.waiting else f"still {t.status}"
    parts = [t.answer.text] if t.answer.text else []
    if t.answer.data is not None:
        parts.append(json.dumps(t.answer.data, ensure_ascii=False))
    return "\n".join(parts) or (t.outcome or t.status)


def ticket_detail(t: Ticket, messages: list[Message]) -> str:
    lines = [f"#{t.id} {t.title}", f"  {t.kind} · {t.status}"
             + (f" · outcome {t.outcome}" if t.outcome else "")]
    facts = [("created by", t.created_by), ("created", _when(t.created_at)),
             ("parent", f"#{t.parent_id}" if t.parent_id else None),
             ("assignee", t.assignee), ("labels", ", ".join(t.labels) or None),
             ("due", _when(t.due_at) if t.due_at else None),
             ("back at", _when(t.next_attention_at) if t.next_attention_at else None),
             ("link", t.html_url)]
    lines += [f"  {name}: {value}" for name, value in facts if value]
    if t.body:
        lines += ["", *("  " + line for line in t.body.splitlines())]
    if t.proposal is not None:
        lines += ["", "  proposal: " + json.dumps(t.proposal, ensure_ascii=False)]
    if t.answer:
        lines += ["", f"  answer by {t.answer.by} via {t.answer.via} at {_when(t.answer.at)}:"]
        lines += ["    " + line for line in answer_text(t).splitlines()]
    if messages:
        lines += ["", "  messages:"]
        for m in messages:
            flag = "" if m.trusted else " (untrusted)"
            said = m.body
            if m.decision:  # a decision on the record: what was decided, even if reopened
                flag += f" [{m.decision}]"
                if m.data is not None:
                    said = " ".join(x for x in (said, json.dumps(m.data, ensure_ascii=False))
                                    if x)
            lines.append(f"    {_when(m.created_at)} {m.author} via {m.via}{flag}: {said}")
    return "\n".join(lines)


def tree_text(node: TreeNode) -> str:
    return "\n".join("  " * depth + ticket_row(t) for depth, t in node.walk())


def event_line(e: Event) -> str:
    extra = ""
    if e.data:
        extra = " " + json.dumps(e.data, ensure_ascii=False, sort_keys=True)
    return f"{e.seq:>6} {_when(e.at)} {e.type:<20} #{e.ticket_id} by {e.actor}{extra}"


def token_row(t: TokenInfo) -> str:
    state = f"revoked {_when(t.revoked_at)}" if t.revoked_at else "active"
    scopes = f"  [{' '.join(t.scopes)}]" if t.scopes else ""
    return f"{t.id:>4}  {t.name:<20} {t.role:<10} {t.prefix}…  {state}{scopes}"
