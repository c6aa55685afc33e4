"""The tools a run may use, each guarded by the scope of the same name.

``Toolbox.call`` is the only way an agent acts. In order: a tool whose scope the
manifest does not grant is refused; the tool-call budget is charged; a tool the manifest
marks sensitive opens an approval ticket to the owner and waits for it (within the run's
time); then the action runs. Every outcome — done, refused, denied — is an audit line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tickethub.agents.audit import AuditTrail
from tickethub.agents.budget import Budget
from tickethub.agents.events import AgentEvent
from tickethub.agents.manifest import Manifest, Scope
from tickethub.agents.tasks import LinkedTasks
from tickethub.domain.actors import Actor
from tickethub.domain.status import Kind
from tickethub.domain.tickets import Ticket, TicketDraft
from tickethub.services.tickets import TicketService
from tickethub.services.waiting import TicketSignals, wait_resolved

_TEXT = {"type": "string", "minLength": 1, "maxLength": 60_000}
SPECS: dict[Scope, dict[str, Any]] = {
    Scope.COMMENT: {"description": "Post a comment where the event happened.",
                    "properties": {"body": _TEXT}, "required": ["body"]},
    Scope.EDIT_OWN_COMMENT: {"description": "Edit a comment this agent posted.",
                             "properties": {"comment_id": {"type": "string"}, "body": _TEXT},
                             "required": ["comment_id", "body"]},
    Scope.EDIT_OWNER_COMMENT: {"description": "Replace the text of the owner's comment "
                               "that started this run.",
                               "properties": {"body": _TEXT}, "required": ["body"]},
    Scope.LABEL: {"description": "Add or remove labels where the event happened.",
                  "properties": {"add": {"type": "array", "items": {"type": "string"}},
                                 "remove": {"type": "array", "items": {"type": "string"}}}},
    Scope.OPEN_TICKET: {"description": "Open a hub ticket (a task) for the owner.",
                        "properties": {"title": _TEXT, "body": {"type": "string"}},
                        "required": ["title"]},
    Scope.ASK_HUMAN: {"description": "Ask the owner a question (a hub ticket to them).",
                      "properties": {"question": _TEXT}, "required": ["question"]},
    Scope.UPDATE_TASK: {"description": "Mark the hub task linked to this thread (its "
                        "Agent Protocol task) done, with a closing note as its output.",
                        "properties": {"note": _TEXT}, "required": ["note"]},
}


def marker(agent: str, run_id: int) -> str:
    """The hidden line an agent's own comments carry (so the kernel never reacts to them
    and ``edit_own_comment`` can tell them apart)."""
    return f"<!-- tickethub-agent:{agent} run:{run_id} -->"


def is_agent_text(text: str) -> bool:
    return "<!-- tickethub-agent:" in text


@dataclass(frozen=True, slots=True)
class ToolResult:
    ok: bool
    text: str  # what the model is told
    data: dict[str, Any] | None = None


class Toolbox:
    def __init__(self, *, manifest: Manifest, event: AgentEvent, actor: Actor, owner: str,
                 run_id: int, run_ticket: int, tickets: TicketService, bus: TicketSignals,
                 budget: Budget, audit: AuditTrail, redact: Callable[[str], str],
                 tasks: LinkedTasks | None = None) -> None:
        self._m = manifest
        self._event = event
        self._actor = actor
        self._owner = owner
        self._run_id = run_id
        self._run_ticket = run_ticket
        self._tickets = tickets
        self._bus = bus
        self._budget = budget
        self._audit = audit
        self._redact = redact
        self._tasks = tasks
        self.posted: list[str] = []  # comment ids this run posted

    def specs(self) -> list[dict[str, Any]]:
        """OpenAI tool definitions for the granted scopes only: the model is not even
        offered a tool it may not use."""
        return [{"type": "function", "function": {
            "name": scope.value, "description": SPECS[scope]["description"],
            "parameters": {"type": "object", "additionalProperties": False,
                           **{k: v for k, v in SPECS[scope].items() if k != "description"}}}}
            for scope in sorted(self._m.scopes)]

    async def call(self, name: str, args: dict[str, Any], why: str = "") -> ToolResult:
        """Run tool ``name`` with ``args`` if the manifest allows it (see module doc).
        Raises ``BudgetExceeded`` when the tool budget is spent."""
        try:
            scope = Scope(name)
        except ValueError:
            scope = None
        if scope is None or scope not in self._m.scopes:
            await self._audit.record(name, "refused", why, reason="scope not granted",
                                     arguments=_short(args))
            return ToolResult(False, f"refused: the scope {name!r} is not granted")
        self._budget.before_tool_call()
        if scope in self._m.sensitive:
            approved, note = await self._approval(scope, args, why)
            if not approved:
                return ToolResult(False, f"refused: {note}")
        try:
            result = await self._run(scope, args)
        except Exception as exc:  # a failed action is told to the model
            await self._audit.record(name, "failed", why, error=str(exc)[:300],
                                     arguments=_short(args))
            return ToolResult(False, f"failed: {str(exc)[:300]}")
        await self._audit.record(name, "done", why, arguments=_short(args),
                                 **(result.data or {}))
        return result

    async def _approval(self, scope: Scope, args: dict[str, Any], why: str
                        ) -> tuple[bool, str]:
        draft = TicketDraft(
            kind=Kind.APPROVAL, parent_id=self._run_ticket, assignee=self._owner,
            title=f"Approve: {self._m.name} wants to {scope.value}",
            body=f"Run {self._run_id} asks to {scope.value}.\n\nWhy: {why or '-'}",
            proposal={"tool": scope.value, "arguments": args})
        ticket, _ = await self._tickets.aask(self._actor, draft)
        await self._audit.record(scope.value, "pending", why, approval_ticket=ticket.id)
        decided: Ticket = await wait_resolved(self._tickets.get, self._bus, ticket.id,
                                              self._budget.seconds_left())
        if decided.approved:
            edited = decided.answer.data if decided.answer else None
            if isinstance(edited, dict) and isinstance(edited.get("arguments"), dict):
                args.clear()
                args.update(edited["arguments"])  # the owner may edit the proposal
            return True, ""
        outcome = "timed out" if decided.waiting else "denied"
        await self._audit.record(scope.value, "refused", why, approval_ticket=ticket.id,
                                 reason=f"approval {outcome}")
        return False, f"the owner's approval was {outcome}"

    async def _run(self, scope: Scope, args: dict[str, Any]) -> ToolResult:
        surface = self._event.surface
        if scope is Scope.COMMENT:
            body = f"{args['body']}\n\n{marker(self._m.name, self._run_id)}"
            comment_id = await surface.comment(self._redact(body))
            self.posted.append(comment_id)
            return ToolResult(True, f"posted comment {comment_id}", {"comment_id": comment_id})
        if scope is Scope.EDIT_OWN_COMMENT:
            comment_id = str(args["comment_id"])
            current = await surface.read_comment(comment_id)
            if comment_id not in self.posted and f"tickethub-agent:{self._m.name} " \
                    not in current:
                raise PermissionError(f"comment {comment_id} was not posted by this agent")
            await surface.edit_comment(comment_id, self._redact(
                f"{args['body']}\n\n{marker(self._m.name, self._run_id)}"))
            return ToolResult(True, f"edited comment {comment_id}", {"comment_id": comment_id})
        if scope is Scope.EDIT_OWNER_COMMENT:
            owners = self._event.comment_id
            if owners is None:
                raise PermissionError("this event carries no comment of the owner's")
            original = await surface.read_comment(owners) or self._event.text
            await surface.edit_comment(owners, self._redact(str(args["body"])))
            return ToolResult(True, f"edited comment {owners}",
                              {"comment_id": owners, "original": original})
        if scope is Scope.LABEL:
            add = [str(x) for x in args.get("add") or []]
            remove = [str(x) for x in args.get("remove") or []]
            await surface.label(add, remove)
            return ToolResult(True, "labels changed", {"add": add, "remove": remove})
        if scope is Scope.UPDATE_TASK:
            if self._tasks is None:
                raise LookupError("hub tasks are not reachable from this run")
            done = await self._tasks.complete(self._owner, self._event,
                                              self._redact(str(args["note"])))
            return ToolResult(True, f"task ticket {done['ticket_id']} marked done", done)
        kind, title, body = ((Kind.TASK, str(args["title"]), str(args.get("body") or ""))
                             if scope is Scope.OPEN_TICKET else
                             (Kind.QUESTION, str(args["question"])[:200],
                              str(args["question"])))
        draft = TicketDraft(kind=kind, title=self._redact(title), body=self._redact(body),
                            parent_id=self._run_ticket, assignee=self._owner)
        ticket, _ = await self._tickets.aask(self._actor, draft)
        return ToolResult(True, f"opened ticket {ticket.id}", {"ticket_id": ticket.id})


def _short(args: dict[str, Any]) -> dict[str, Any]:
    return {k: (v[:500] if isinstance(v, str) else v) for k, v in args.items()}
