"""An approval's review on the ticket page: the proposal as an editable form with its
changes against the original, and after the decision the approved version with what was
changed (``domain.proposal_diff``).

``version_rows(original, decided)`` flattens the decided value into labelled rows
(``arguments.replicas``), each marked ``same``, ``changed``, ``added`` or ``removed``
with its earlier value, so the page shows the approved version once, readably, instead
of a JSON dump. ``outcome_line(ticket)`` is the one line said after a decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tickethub.domain import proposal_diff
from tickethub.domain.messages import Decision, Message
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket

_ABSENT: Any = object()


@dataclass(frozen=True, slots=True)
class Row:
    where: str
    value: str
    kind: str  # same, changed, added, removed
    before: str | None = None


def _leaves(value: Any, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(value, Mapping) and value:
        out = []
        for key, sub in value.items():
            out.extend(_leaves(sub, (*path, str(key))))
        return out
    return [(path, value)]


def version_rows(original: Any, decided: Any) -> list[Row]:
    """The decided value as rows, marked against ``original`` (removed keys last)."""
    changes = {c.path: c for c in proposal_diff.diff(original, decided)}
    rows = []
    for path, value in _leaves(decided, ()):
        change = changes.get(path)
        where = ".".join(path) or "value"
        if change is None:
            # A leaf under a changed container (an object that replaced a string).
            parent = next((changes[path[:n]] for n in range(len(path), -1, -1)
                           if path[:n] in changes), None)
            kind = "same" if parent is None else ("added" if parent.kind == "added"
                                                   else "changed")
            rows.append(Row(where, proposal_diff.show(value), kind))
        elif change.kind == "added":
            rows.append(Row(where, proposal_diff.show(value), "added"))
        else:
            rows.append(Row(where, proposal_diff.show(value), "changed",
                            proposal_diff.show(change.before)))
    for change in changes.values():
        if change.kind == "removed":
            rows.append(Row(change.where, "", "removed", proposal_diff.show(change.before)))
    return rows


def edited_value(proposal: Any, baseline: Any, data: Any) -> Any:
    """The value to approve from a review form: ``data`` without the keys the proposal
    did not have and the person did not touch (an unticked optional check box reads as
    ``false``, an empty group as ``{}``; neither is a change). ``baseline`` is the form
    read back untouched."""
    if not (isinstance(proposal, Mapping) and isinstance(data, Mapping)):
        return data
    base = baseline if isinstance(baseline, Mapping) else {}
    out = {}
    for key, value in data.items():
        if key not in proposal and key in base and not proposal_diff.diff(base[key], value):
            continue
        out[key] = (edited_value(proposal[key], base.get(key), value) if key in proposal
                    else value)
    return out


def edited(ticket: Ticket) -> bool:
    """An approved approval whose decided value differs from its proposal."""
    return (ticket.kind is Kind.APPROVAL and ticket.status is Status.APPROVED
            and ticket.answer is not None
            and bool(proposal_diff.diff(ticket.proposal, ticket.answer.data)))


def outcome_line(ticket: Ticket) -> str | None:
    """``Approved with changes: replicas 4 → 6.`` / ``Approved as proposed.`` for an
    approved approval, else ``None``."""
    if ticket.kind is not Kind.APPROVAL or ticket.status is not Status.APPROVED \
            or ticket.answer is None:
        return None
    line = proposal_diff.outcome(ticket.proposal, ticket.answer.data)
    return line[0].upper() + line[1:] + "."


def message_line(message: Message, proposal: Any) -> str | None:
    """For a decision message of an approval, the change line that replaces its JSON."""
    if message.decision not in (Decision.APPROVED, Decision.EDITED) or proposal is None:
        return None
    return proposal_diff.outcome(proposal, message.data)
