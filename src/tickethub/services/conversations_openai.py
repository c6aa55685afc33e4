"""Chat conversations from OpenAI-speaking agents, kept as tickets.

One ticket per conversation: a client may name its conversation (``conversation_id``),
else the conversation is known by its opening messages (system prompts and the first user
message), scoped to the agent and the team label. A later turn of an answered
conversation reopens the same ticket and appends the new turns, so a multi-turn agent
keeps one thread. Tool calls the upstream model proposes and a policy names become
approval tickets (:meth:`OpenAIConversations.open_tool_approval`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tickethub.domain.actors import Actor
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket, TicketDraft, TicketQuery
from tickethub.errors import IdempotencyKeyReused, IllegalTransition
from tickethub.llm.port import (
    Completion,
    Message,
    Tool,
    ToolCall,
    Usage,
    estimate_tokens,
    tool_schema,
)
from tickethub.services import openai_rendering as render
from tickethub.services.tickets import TicketService

REF = "openai_conversation"
INVALID_LABEL = "invalid-tool-call"  # an approval whose proposed call breaks its schema
VIA = "openai"
OPENING_ROLES = ("system", "developer")


@dataclass(frozen=True, slots=True)
class HumanTurn:
    """One chat-completions request addressed to a person."""

    messages: Sequence[Message]
    tools: Sequence[Tool] = ()
    response_format: dict[str, Any] | None = None
    label: str | None = None
    conversation_id: str | None = None


@dataclass(frozen=True, slots=True)
class Refusal:
    """A person said no (or nobody decided in time): the agent must not make the call."""

    reason: str
    outcome: str


def conversation_key(actor: str, turn: HumanTurn) -> str:
    """The stable key of the conversation ``turn`` belongs to."""
    if turn.conversation_id:
        basis: Any = ["id", turn.conversation_id]
    else:
        opening: list[Any] = []
        for message in turn.messages:
            opening.append([message.get("role"), render.text_of(message.get("content"))])
            if message.get("role") not in OPENING_ROLES:
                break
        basis = ["opening", opening]
    canonical = json.dumps([actor, turn.label or "", basis], sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:40]


def new_turns(messages: Sequence[Message]) -> list[Message]:
    """The messages after the last assistant message: what the agent added this turn."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    if last >= 0:
        return list(messages[last + 1:])
    return [m for m in messages if m.get("role") not in OPENING_ROLES]


def _seen(reply: Completion, messages: Sequence[Message]) -> bool:
    """True when ``messages`` already hold ``reply`` as an assistant turn."""
    calls = [(c.name, c.arguments) for c in reply.tool_calls]
    for message in messages:
        if message.get("role") != "assistant":
            continue
        if calls:
            sent = []
            for raw in message.get("tool_calls") or []:
                function = raw.get("function") or {}
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except ValueError:
                    continue
                sent.append((function.get("name"), arguments))
            if sent == calls:
                return True
        elif render.text_of(message.get("content")) == (reply.content or ""):
            return True
    return False


def answer_schema(turn: HumanTurn) -> dict[str, Any] | None:
    """What a structured answer must look like: tool calls, a JSON schema, or free."""
    if turn.tools:
        return render.tools_answer_schema(turn.tools)
    fmt = turn.response_format or {}
    if fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        return schema if isinstance(schema, dict) else {"type": "object"}
    if fmt.get("type") == "json_object":
        return {"type": "object"}
    return None


class OpenAIConversations:
    """The use cases behind the OpenAI door; blocking (run them in a worker thread).

    ``replay_answers`` (the setting ``openai_replay_answers``, default off) lets a plain
    question (no tools) asked again word for word, without a conversation id, get the
    person's earlier answer at once; otherwise such a request is a new question."""

    def __init__(self, tickets: TicketService, *, replay_answers: bool = False) -> None:
        self._tickets = tickets
        self._replay_answers = replay_answers

    def find(self, key: str, actor: Actor) -> Ticket | None:
        """The conversation ticket of ``key`` that ``actor`` reads (its own): a key is
        made from the actor's name, and the read policy keeps it so whatever the id."""
        page = self._tickets.list(TicketQuery(ref=(REF, key), kind=Kind.QUESTION, limit=1),
                                  actor)
        return page.items[0] if page.items else None

    def open_turn(self, actor: Actor, turn: HumanTurn) -> Ticket:
        """The conversation's ticket, waiting for the person's reply to this turn.

        New conversation: a question ticket. Answered (or otherwise resolved) one: reopened
        with this turn's messages appended. One still waiting (the agent retried): as is.

        A request that does not yet hold the answer of its answered ticket repeats the
        answered turn. With a conversation id it is that conversation's retry and gets
        the answered ticket. Without one it may just be the same words asked again, so
        it is a new question (a new ticket) — unless ``replay_answers`` is on and the
        turn is a plain question: a person's tool call is never handed out again."""
        key = conversation_key(actor.name, turn)
        ticket = self.find(key, actor)
        if ticket is None:
            return self._open(actor, turn, key)
        if ticket.waiting:
            return ticket
        reply = self.reply_of(ticket, turn)
        if reply is not None and not _seen(reply, turn.messages):
            if turn.conversation_id or (self._replay_answers and not turn.tools):
                return ticket  # the answer of the turn asked again is its reply
            return self._open(actor, turn, key, after=ticket)
        added = new_turns(turn.messages)
        self._tickets.post_message(
            actor, ticket.id, render.render_messages(added) or "(the agent continues)", VIA,
            data={"messages": added})
        try:
            return self._tickets.transition(actor, ticket.id, Status.OPEN, VIA,
                                            reason="the agent continued the conversation")
        except IllegalTransition:  # a concurrent request of this turn reopened it first
            return self._tickets.get(ticket.id)

    def _check_schemas(self, tools: Sequence[Tool], response_format: Any = None) -> None:
        """Check each caller schema on its own, so a refusal names the request's field
        (``tools.0.function.parameters...``), not a place in the ticket's combined schema."""
        for n, tool in enumerate(tools):
            self._tickets.check_schema(tool_schema(tool), f"tools.{n}.function.parameters")
        fmt = response_format or {}
        schema = (fmt.get("json_schema") or {}).get("schema")
        if fmt.get("type") == "json_schema" and isinstance(schema, dict):
            self._tickets.check_schema(schema, "response_format.json_schema.schema")

    def _open(self, actor: Actor, turn: HumanTurn, key: str, *,
              after: Ticket | None = None) -> Ticket:
        """A new question ticket for the conversation ``key``. ``after``, its answered
        ticket, names the new one's idempotency key, so concurrent copies of one request
        still open one ticket; :meth:`find` returns the newest."""
        self._check_schemas(turn.tools, turn.response_format)
        body = render.render_messages(turn.messages)
        tools = render.render_tools(turn.tools)
        draft = TicketDraft(
            kind=Kind.QUESTION, title=render.title_of(turn.messages),
            body=f"{body}\n\n{tools}".strip(), labels=(turn.label,) if turn.label else (),
            response_schema=answer_schema(turn), refs={REF: key},
        )
        try:
            idempotency_key = f"openai:{key}" + (f":after:{after.id}" if after else "")
            ticket, _ = self._tickets.ask(actor, draft, idempotency_key)
        except IdempotencyKeyReused:  # a concurrent first turn opened it a moment ago
            found = self.find(key, actor)
            if found is None:
                raise
            ticket = found
        return ticket

    def reply_of(self, ticket: Ticket, turn: HumanTurn) -> Completion | None:
        """The person's answer as the assistant's turn; ``None`` when the ticket holds no
        answer (still waiting, expired, cancelled)."""
        if ticket.status is not Status.ANSWERED or ticket.answer is None:
            return None
        answer = ticket.answer
        data = answer.data
        calls: tuple[ToolCall, ...] = ()
        content: str | None
        if turn.tools and isinstance(data, dict):
            calls = tuple(
                ToolCall(f"call_{ticket.id}_{ticket.version}_{n}", str(c["name"]),
                         dict(c["arguments"]))
                for n, c in enumerate(data.get("tool_calls") or [])
            )
            content = data.get("content") or answer.text or None
        elif data is not None and answer_schema(turn) is not None:
            content = json.dumps(data)
        else:
            content = answer.text if answer.text is not None else json.dumps(data)
        prompt = sum(estimate_tokens(render.text_of(m.get("content"))) for m in turn.messages)
        produced = (content or "") + "".join(json.dumps(c.arguments) for c in calls)
        return Completion(
            content=content if content or not calls else None, tool_calls=calls,
            finish_reason="tool_calls" if calls else "stop",
            usage=Usage(prompt, estimate_tokens(produced)), model="human",
        )

    # -- the proxy's approval gate -------------------------------------------------------

    def open_tool_approval(
        self, actor: Actor, model: str, messages: Sequence[Message],
        calls: Sequence[ToolCall], tools: Sequence[Tool],
    ) -> Ticket:
        """An approval ticket showing ``calls`` the upstream model wants to make.

        Calls that break their tool's own schema are the upstream's output, not the
        agent's request: the ticket opens all the same, labelled ``INVALID_LABEL`` with
        the problem spelled out, and the person can only edit or deny them."""
        self._check_schemas(tools)
        names = ", ".join(dict.fromkeys(c.name for c in calls))
        context = render.render_messages(new_turns(messages)[-3:])
        proposal = {"tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments}
                                   for c in calls]}
        schema = render.approval_schema(calls, tools)
        problem = self._tickets.schema_problem(proposal, schema, "proposal")
        labels: tuple[str, ...] = ("tool-approval",)
        warning = ""
        if problem is not None:
            labels += (INVALID_LABEL,)
            warning = (f"**The model's call does not match the tool's schema** "
                       f"(`{problem}`): it cannot be approved as it is. Edit the arguments "
                       f"so they match, or deny.\n\n")
        draft = TicketDraft(
            kind=Kind.APPROVAL, title=f"Approve tool call: {names}"[: render.TITLE_MAX],
            body=(f"{warning}The model `{model}` wants to call:\n\n"
                  f"{render.render_calls(calls)}\n\n"
                  f"Approve, edit the arguments (they must match the tool's schema), or deny "
                  f"with a reason the agent will see.\n\n---\n\n{context}").strip(),
            labels=labels, proposal=proposal, response_schema=schema,
            refs={"openai_tool_calls": [c.id for c in calls if c.id]},
        )
        ticket, _ = self._tickets.ask(actor, draft, unchecked_proposal=True)
        return ticket

    @staticmethod
    def approved_calls(ticket: Ticket) -> tuple[ToolCall, ...] | Refusal | None:
        """The calls as approved (maybe edited), a :class:`Refusal`, or ``None`` while
        nobody decided. An approval that expired is refused: approvals fail closed."""
        if ticket.waiting:
            return None
        if ticket.status is Status.APPROVED and ticket.answer is not None:
            data = ticket.answer.data or ticket.proposal
            return tuple(ToolCall(str(c.get("id", "")), str(c["name"]), dict(c["arguments"]))
                         for c in data["tool_calls"])
        reason = ticket.answer.text if ticket.answer and ticket.answer.text else None
        return Refusal(reason or f"the tool call was not approved ({ticket.status.value})",
                       ticket.outcome or ticket.status.value)

    def record_upstream_failure(
        self, actor: Actor, model: str, messages: Sequence[Message], error: str
    ) -> Ticket:
        """Note an upstream failure on the conversation's record: an ``info`` ticket per
        conversation, with one message per failure."""
        key = conversation_key(actor.name, HumanTurn(messages=messages, label=f"upstream:{model}"))
        page = self._tickets.list(TicketQuery(ref=(REF, key), kind=Kind.INFO, limit=1),
                                  actor)
        if page.items:
            ticket = page.items[0]
            self._tickets.post_message(actor, ticket.id, error, VIA)
            return ticket
        draft = TicketDraft(
            kind=Kind.INFO, title=f"Upstream failed for model {model}"[: render.TITLE_MAX],
            body=f"{error}\n\n---\n\n{render.render_messages(messages[-3:])}",
            labels=("upstream-error",), refs={REF: key},
        )
        ticket, _ = self._tickets.ask(actor, draft)
        return ticket
