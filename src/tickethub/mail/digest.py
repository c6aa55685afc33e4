"""The daily digest: what needs a person today.

* overdue — waiting issues whose ``due_at`` has passed;
* stalled — waiting issues unchanged for ``stalled_days``;
* newly done — issues resolved in the last 24 hours.

As Markdown (``digest_markdown``) and as a mail (``digest_email``, Markdown as the plain
text part).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from tickethub.domain.tickets import Ticket
from tickethub.mail.tree import tree_tickets
from tickethub.services.tickets import TicketService


@dataclass(frozen=True, slots=True)
class Digest:
    at: datetime
    overdue: list[Ticket]
    stalled: list[Ticket]
    done: list[Ticket]


def build_digest(tickets: TicketService, now: datetime, *, root_issue: int | None = None,
                 stalled_days: float = 7.0) -> Digest:
    everything = [t for t in tree_tickets(tickets, root_issue) if t.id != root_issue]
    stalled_before = now - timedelta(days=stalled_days)
    overdue = [t for t in everything if t.waiting and t.due_at is not None and t.due_at < now]
    overdue_ids = {t.id for t in overdue}
    stalled = [t for t in everything if t.waiting and t.id not in overdue_ids
               and t.updated_at < stalled_before]
    done = [t for t in everything if not t.waiting
            and t.updated_at >= now - timedelta(days=1)]
    return Digest(now, sorted(overdue, key=lambda t: t.due_at or now),
                  sorted(stalled, key=lambda t: t.updated_at), sorted(done, key=lambda t: t.id))


def _line(ticket: Ticket, extra: str) -> str:
    return f"- #{ticket.id} {ticket.title} ({ticket.kind.value}, {ticket.status.value}{extra})"


def digest_markdown(digest: Digest) -> str:
    lines = [f"# Digest for {digest.at:%Y-%m-%d}", ""]
    # (heading, tickets, what each ticket's line adds)
    sections: tuple[tuple[str, list[Ticket], Callable[[Ticket], str]], ...] = (
        ("Overdue", digest.overdue,
         lambda t: f", due {t.due_at:%Y-%m-%d}" if t.due_at else ""),
        ("Stalled", digest.stalled, lambda t: f", unchanged since {t.updated_at:%Y-%m-%d}"),
        ("Newly done", digest.done, lambda t: ""),
    )
    for title, items, extra in sections:
        lines.append(f"## {title} ({len(items)})")
        lines += [_line(t, extra(t)) for t in items] or ["- nothing"]
        lines.append("")
    return "\n".join(lines)


def digest_email(digest: Digest, markdown: str, mail_from: str, to: list[str]) -> EmailMessage:
    message = EmailMessage()
    message["From"] = mail_from
    message["To"] = ", ".join(to)
    message["Subject"] = (f"tickethub digest {digest.at:%Y-%m-%d}: {len(digest.overdue)} "
                          f"overdue, {len(digest.stalled)} stalled, {len(digest.done)} done")
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = make_msgid(domain=mail_from.rpartition("@")[2] or "localhost")
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(markdown)
    return message
