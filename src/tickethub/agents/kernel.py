"""The kernel: routes events to the agents their owners installed, and runs them.

For each event (``dispatch``) every enabled installation whose agent has a matching
trigger gets a run:

* ``/command`` — only when the owner wrote it (their identity on that channel);
* ``@owner`` — when someone else mentions the owner;
* an event name (``issue_comment.created``) — whoever wrote it (their text is untrusted);

Text an agent posted (it carries the agent marker) and text by bots never trigger. A
run is a hub ticket (kind task, assigned to the owner, label ``agent-run``) that carries
the audit lines; its row in ``agent_runs`` keeps status and the budget used. A budget
overrun (``BudgetExceeded`` or the wall time) stops the run cleanly: status ``stopped``,
an audit line naming the limit, the run ticket cancelled.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from tickethub.agents import context as context_builder
from tickethub.agents.audit import VIA, AuditTrail
from tickethub.agents.budget import Budget, BudgetExceeded
from tickethub.agents.events import AgentEvent
from tickethub.agents.manifest import Manifest, RunnerKind, Trigger, TriggerKind
from tickethub.agents.plugin import PersonalAgent
from tickethub.agents.registry import AgentRegistry
from tickethub.agents.run import Run
from tickethub.agents.runners.actions import ActionsRunner
from tickethub.agents.secrets import SecretBox
from tickethub.agents.surfaces import TicketSurface
from tickethub.agents.tasks import LinkedTasks
from tickethub.agents.tools import Toolbox, is_agent_text
from tickethub.domain.actors import Actor, Role
from tickethub.domain.agent_runs import AgentInstallation, AgentRun, RunStatus
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import TicketDraft
from tickethub.domain.visibility import READ_ALL
from tickethub.llm.port import LLM, Completion, Message, Tool
from tickethub.services.ports import Clock
from tickethub.services.tickets import TicketService
from tickethub.services.waiting import TicketSignals
from tickethub.store.agents_store import SqlAgentStore

log = logging.getLogger(__name__)
_MENTION = re.compile(r"@([^\s@]+)")


def agent_actor(agent: str, owner: str) -> Actor:
    """The hub actor a run acts as: an agent (never a responder), named for both."""
    return Actor(f"agent:{agent}@{owner}", Role.AGENT)


class Kernel:
    def __init__(self, registry: AgentRegistry, store: SqlAgentStore,
                 tickets: TicketService, bus: TicketSignals, clock: Clock,
                 llm_for: Callable[[AgentInstallation], LLM | None],
                 secrets: SecretBox,
                 owner_secrets: Callable[[str], object] = lambda owner: None) -> None:
        self.registry = registry
        self._store = store
        self._tickets = tickets
        self._bus = bus
        self._clock = clock
        self._llm_for = llm_for
        self._secrets = secrets
        # Opens the owner's sealed secrets before a run, so the box knows to redact them
        # even when the run never uses them (a person may paste one into a comment).
        self._owner_secrets = owner_secrets
        self.running: set[asyncio.Task[AgentRun]] = set()
        # Per source, what binds a run's surface to the credential it writes with
        # (``agents/credentials.py`` for GitHub): returns the event and the kind used.
        self.credentials: dict[str, Callable[[AgentInstallation, Manifest, AgentEvent],
                                             Awaitable[tuple[AgentEvent, str]]]] = {}
        # Runs whose manifest says ``runner: actions`` (set up with the GitHub channel).
        self.actions: ActionsRunner | None = None
        # The hub task behind an event's thread (the ``update_task`` tool).
        self.tasks: LinkedTasks | None = None

    def claims(self, command: str) -> bool:
        """True when some installed agent answers to ``/command`` (the GitHub channel
        then does not reply "unknown command")."""
        return any(command in self.registry.get(name).manifest.commands()
                   for name in self.registry.names())

    # -- routing ---------------------------------------------------------------------------

    async def dispatch(self, event: AgentEvent, owner: str | None = None,
                       only: str | None = None) -> list[asyncio.Task[AgentRun]]:
        """Start a run for every installation the event triggers (only ``owner``'s, when
        given); returns their tasks (the caller need not wait: runs go on beside the
        channel's inbox)."""
        if event.author_is_bot or is_agent_text(event.text):
            return []
        # Most events (plain comments) trigger no agent at all: decide that from the
        # manifests alone, and read only the installations of agents that might match.
        candidates = {name: agent for name in self.registry.names()
                      if (only is None or name == only)
                      and _might_match(agent := self.registry.get(name), event)}
        if not candidates:
            return []
        every: list[str] = []
        by_identity: list[str] = []
        for name, agent in sorted(candidates.items()):
            broad = event.source == "webhook" or any(  # a webhook is the owner's own
                _fires_for_anyone(t, event) for t in agent.manifest.triggers)
            (every if broad else by_identity).append(name)
        # A command counts only from its owner, a mention only of them: read just the
        # installations whose owner wrote the event or is named in it.
        names = [event.author, *sorted(_mentions(event.text))]
        installs = await asyncio.to_thread(self._store.routing_installations, owner, every,
                                           by_identity, event.source, names)
        tasks = []
        for install in installs:
            agent = candidates[install.agent]
            if self._matches(agent, install, event):
                task = asyncio.create_task(self.execute(install, agent, event))
                self.running.add(task)
                task.add_done_callback(self.running.discard)
                tasks.append(task)
        return tasks

    @staticmethod
    def _matches(agent: PersonalAgent, install: AgentInstallation, event: AgentEvent
                 ) -> bool:
        identity = _identity(install, event.source)
        words = event.text.strip().split(maxsplit=1)
        first = words[0] if words else ""
        for trigger in agent.manifest.triggers:
            if trigger.kind is TriggerKind.COMMAND:
                if (identity and event.author == identity and first == trigger.value
                        and not event.name.endswith((".edited", ".deleted"))):
                    return True
            elif trigger.kind is TriggerKind.MENTION:
                if identity and event.author != identity and identity in _mentions(event.text):
                    return True
            elif _fires_for_anyone(trigger, event):
                return True
        return False

    async def event_in(self, source: str, name: str, author: str, text: str,
                       ticket_id: int, *, comment_id: str | None = None,
                       payload: dict[str, Any] | None = None, owner: str | None = None,
                       only: str | None = None) -> list[asyncio.Task[AgentRun]]:
        """One event from a channel whose threads are hub tickets (chat rooms, inbound
        webhooks): ``author`` is the writer's identity on ``source``; ``owner`` limits
        it to one person's installations (a webhook signed with their secret)."""
        # The surface is bound to this one ticket, which the channel already matched to
        # the event, so the kernel's actor on it reads it whoever opened it.
        bridge = Actor(f"agents:{source}", Role.AGENT, scopes=frozenset({READ_ALL}))
        surface = TicketSurface(self._tickets, ticket_id, bridge, source)
        return await self.dispatch(AgentEvent(name, author, text, surface,
                                              comment_id=comment_id, payload=payload or {}),
                                   owner, only)

    # -- one run ---------------------------------------------------------------------------

    async def execute(self, install: AgentInstallation, agent: PersonalAgent,
                      event: AgentEvent) -> AgentRun:
        """Run ``agent`` for ``install`` on ``event``; never raises (the outcome is in
        the returned run and its audit lines)."""
        manifest = agent.manifest
        actor = agent_actor(manifest.name, install.owner)
        redact = self._secrets.redact
        await asyncio.to_thread(self._owner_secrets, install.owner)
        record = await asyncio.to_thread(self._store.start_run, install.id, event.label,
                                         self._clock.now())
        ticket, _ = await asyncio.to_thread(self._tickets.ask, actor, TicketDraft(
            kind=Kind.TASK, title=f"{manifest.name} for {install.owner}: {event.label}",
            body=f"Run {record.id} of {manifest.name}, acting for {install.owner}, "
                 f"because of {event.label} by {event.author}.",
            assignee=install.owner, labels=("agent-run",),
            refs={"agent_run": str(record.id)}))
        await asyncio.to_thread(self._store.set_run_ticket, record.id, ticket.id)
        audit = AuditTrail(self._tickets, actor, ticket.id, agent=manifest.name,
                           owner=install.owner, run_id=record.id, because=event.label,
                           redact=redact)
        budget = Budget(manifest.limits)
        status, error = RunStatus.DONE, None
        try:
            await audit.record("run", "started", author=event.author)
            remote = manifest.runner.kind is RunnerKind.ACTIONS
            llm = self._llm_for(install)
            if llm is None and not remote:  # an Actions run brings its own model
                raise RuntimeError("no model is configured for personal agents")
            prepare = self.credentials.get(event.source)
            if prepare is not None:
                event, credential = await prepare(install, manifest, event)
                await audit.record("credential", credential)
            identity = _identity(install, event.source)
            ctx = await context_builder.build(event, identity, manifest.context_chars,
                                              redact)
            tools = Toolbox(manifest=manifest, event=event, actor=actor,
                            owner=install.owner, run_id=record.id, run_ticket=ticket.id,
                            tickets=self._tickets, bus=self._bus, budget=budget,
                            audit=audit, redact=redact, tasks=self.tasks)
            run = Run(record.id, install.owner, event, ctx, dict(install.config), tools,
                      budget, _Redacted(llm or _NoModel(), redact))
            async with asyncio.timeout(manifest.limits.seconds):
                if not remote:
                    await agent.run(run)
                elif self.actions is None:
                    raise RuntimeError("the Actions runner is not set up on this hub")
                else:
                    await self.actions.run(run, manifest, install.owner, audit)
        except BudgetExceeded as exc:
            status, error = RunStatus.STOPPED, str(exc)
        except TimeoutError:
            status, error = RunStatus.STOPPED, f"budget spent: seconds {manifest.limits.seconds:g}"
        except Exception as exc:  # a failing plugin must not stop the hub
            log.warning("agent %s (run %s) failed: %s", manifest.name, record.id,
                        redact(repr(exc)))
            status, error = RunStatus.FAILED, redact(f"{type(exc).__name__}: {exc}")[:500]
        used = budget.used
        await audit.record("run", status.value, error or "", used=used.as_dict())
        finished = await asyncio.to_thread(self._store.finish_run, record.id, status, used,
                                           error, self._clock.now())
        target = Status.DONE if status is RunStatus.DONE else Status.CANCELLED
        await asyncio.to_thread(self._tickets.transition, actor, ticket.id, target, VIA,
                                reason=error)
        return finished

    async def drain(self) -> None:
        """Wait for the runs in flight (tests, shutdown)."""
        while self.running:
            await asyncio.gather(*list(self.running), return_exceptions=True)


def _identity(install: AgentInstallation, source: str) -> str | None:
    """The owner's name on ``source``; on signed webhooks (only the owner holds the
    secret) their hub name unless they set one."""
    found = install.identities.get(source)
    return found or (install.owner if source == "webhook" else None)


def _mentions(text: str) -> set[str]:
    """The names ``@``-mentioned in ``text`` (``@alice-gh,`` names ``alice-gh``; a chat
    identity that starts with ``@`` is named with it too)."""
    out = set()
    for token in _MENTION.findall(text):
        for name in {token, token.rstrip(".,;:!?)]}'\"")}:
            if name:
                out |= {name, "@" + name}
    return out


def _might_match(agent: PersonalAgent, event: AgentEvent) -> bool:
    """Whether some owner's installation of ``agent`` could be triggered by ``event``
    (``Kernel._matches`` without the owner)."""
    words = event.text.strip().split(maxsplit=1)
    first = words[0] if words else ""
    for trigger in agent.manifest.triggers:
        if trigger.kind is TriggerKind.COMMAND and first == trigger.value:
            return True
        if trigger.kind is TriggerKind.MENTION and "@" in event.text:
            return True
        if _fires_for_anyone(trigger, event):
            return True
    return False


def _fires_for_anyone(trigger: Trigger, event: AgentEvent) -> bool:
    """Event and schedule triggers fire whoever wrote the event."""
    if trigger.kind is TriggerKind.EVENT:
        return event.source != "schedule" and event.name == trigger.value
    return (trigger.kind is TriggerKind.SCHEDULE and event.source == "schedule"
            and event.name == trigger.value)


class _NoModel:
    """The model of an Actions run: the workflow calls its own; the hub never does."""

    async def complete(self, messages: Sequence[Message], tools: Sequence[Tool] | None = None,
                       response_format: dict[str, Any] | None = None) -> Completion:
        raise RuntimeError("an Actions run calls its model in the workflow, not the hub")


class _Redacted:
    """The run's model, with every secret redacted from what it is shown (a second line
    of defence behind the context builder)."""

    def __init__(self, llm: LLM, redact: Callable[[str], str]) -> None:
        self._llm = llm
        self._redact = redact

    async def complete(self, messages: Sequence[Message], tools: Sequence[Tool] | None = None,
                       response_format: dict[str, Any] | None = None) -> Completion:
        # The whole conversation, tool calls included (a model may echo what it saw).
        clean = json.loads(self._redact(json.dumps(list(messages))))
        return await self._llm.complete(clean, tools, response_format)


__all__ = ["Kernel", "agent_actor"]
