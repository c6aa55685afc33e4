"""What a responder can do to a ticket from the triage view, one small handler per action.

Each handler reads its form fields and calls the same service the API calls (no write
logic lives in ``web/``); every action is its own audited event, and in a bulk action
each ticket is its own service call, so each gets its own decision and event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from tickethub.domain.actors import Actor
from tickethub.domain.status import Status
from tickethub.errors import ValidationFailed
from tickethub.services.doors import WebDoor

VIA = "web"
SNOOZES: dict[str, tuple[timedelta, str]] = {
    "1h": (timedelta(hours=1), "1 hour"),
    "4h": (timedelta(hours=4), "4 hours"),
    "1d": (timedelta(days=1), "1 day"),
    "1w": (timedelta(weeks=1), "1 week"),
}


@dataclass(frozen=True, slots=True)
class Act:
    """One action's input: the person, the ticket, the form, the version it was shown at."""

    hub: WebDoor
    actor: Actor
    ticket_id: int
    form: dict[str, str]
    version: int | None

    def text(self, name: str) -> str:
        return self.form.get(name, "").strip()


def _approve(a: Act) -> str:
    a.hub.tickets.approve(a.actor, a.ticket_id, a.text("comment") or None, None, VIA,
                          expected_version=a.version)
    return f"Approved #{a.ticket_id}."


def _deny(a: Act) -> str:
    reason = a.text("reason")
    if not reason:
        raise ValidationFailed("Say why, so the agent can do better.", field="reason")
    a.hub.tickets.deny(a.actor, a.ticket_id, reason, VIA, expected_version=a.version)
    return f"Denied #{a.ticket_id}."


def _reply(a: Act) -> str:
    text = a.text("text")
    if not text:
        raise ValidationFailed("Write an answer.", field="text")
    a.hub.tickets.answer(a.actor, a.ticket_id, text, None, VIA, expected_version=a.version)
    return f"Answered #{a.ticket_id}."


def _comment(a: Act) -> str:
    body = a.text("body")
    if not body:
        raise ValidationFailed("Write a comment.", field="body")
    a.hub.tickets.post_message(a.actor, a.ticket_id, body, VIA)
    return f"Commented on #{a.ticket_id}; it stays open."


def _move(target: Status, done: str) -> Callable[[Act], str]:
    def handle(a: Act) -> str:
        a.hub.tickets.transition(a.actor, a.ticket_id, target, VIA,
                                 reason=a.text("reason") or None,
                                 expected_version=a.version)
        return done.format(id=a.ticket_id)
    return handle


def _snooze(a: Act) -> str:
    choice = SNOOZES.get(a.text("for"))
    if choice is None:
        raise ValidationFailed(f"snooze for one of {', '.join(SNOOZES)}", field="for")
    until = a.hub.clock.now() + choice[0]
    a.hub.tickets.transition(a.actor, a.ticket_id, Status.DEFERRED, VIA, until=until,
                             expected_version=a.version)
    return f"Snoozed #{a.ticket_id} for {choice[1]}."


def _assign(a: Act) -> str:
    name = a.text("assignee")
    assignee = a.actor.name if name == "me" else (name or None)
    a.hub.tickets.assign(a.actor, a.ticket_id, assignee, expected_version=a.version)
    return (f"Assigned #{a.ticket_id} to {assignee}." if assignee
            else f"Unassigned #{a.ticket_id}.")


def _labels(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _label(a: Act) -> str:
    add, remove = _labels(a.text("add")), _labels(a.text("remove"))
    if not add and not remove:
        raise ValidationFailed("name a label to add or remove", field="add")
    a.hub.tickets.label(a.actor, a.ticket_id, add, remove, expected_version=a.version)
    return f"Labels of #{a.ticket_id} changed."


ACTIONS: dict[str, Callable[[Act], str]] = {
    "approve": _approve,
    "deny": _deny,
    "reply": _reply,
    "comment": _comment,
    "done": _move(Status.DONE, "Marked #{id} done."),
    "cancel": _move(Status.CANCELLED, "Cancelled #{id}."),
    "reopen": _move(Status.OPEN, "Reopened #{id}."),
    "snooze": _snooze,
    "assign": _assign,
    "label": _label,
}
# Bulk actions need no per-ticket input.
BULK = ("approve", "done", "cancel", "reopen")


def run(action: str, act: Act) -> str:
    """Run ``action``; returns the one-line notice. Raises the service's errors
    (``ValidationFailed`` naming the field, ``StaleVersion``, ``IllegalTransition``,
    ``Forbidden``, ``NotFound``) for the caller to show."""
    handler = ACTIONS.get(action)
    if handler is None:
        raise ValidationFailed(f"action must be one of {', '.join(ACTIONS)}", field="action")
    return handler(act)


def form_dict(form: Any) -> dict[str, str]:
    """A posted form as text; a repeated field (the labels to remove) joined with commas."""
    return {key: ",".join(str(v) for v in form.getlist(key)) for key in form}
