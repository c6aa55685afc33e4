"""Schedule triggers (``every 1h``): the hub starts the run itself.

Each scheduled installation has one hub ticket as its thread (info, assigned to the
owner, ref ``agent_schedule=<installation id>``); a run is due when the installation's
last run of that trigger started at least one period ago. ``ScheduleLoop`` checks every
``tick`` seconds; a hub that was down runs a missed schedule once on return, not once
per missed period.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from tickethub.agents.kernel import Kernel
from tickethub.agents.manifest import TriggerKind
from tickethub.domain.actors import Actor, Role
from tickethub.domain.agent_runs import AgentRun
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft, TicketQuery
from tickethub.services.ports import Clock
from tickethub.services.tickets import TicketService
from tickethub.store.agents_store import SqlAgentStore

log = logging.getLogger(__name__)


async def run_due(kernel: Kernel, store: SqlAgentStore, tickets: TicketService,
                  clock: Clock) -> list[asyncio.Task[AgentRun]]:
    """Start every scheduled run that is due now; returns their tasks."""
    now = clock.now()
    started = []
    for install in await asyncio.to_thread(store.installations, None, True):
        try:
            agent = kernel.registry.get(install.agent)
        except Exception:  # the plugin was removed; its installation waits
            continue
        for trigger in agent.manifest.triggers:
            if trigger.kind is not TriggerKind.SCHEDULE:
                continue
            label = f"schedule:{trigger.value}"
            recent = await asyncio.to_thread(store.runs, install.id, 50)
            last = next((r for r in recent if r.trigger == label), None)
            if last is not None and now - last.started_at < timedelta(
                    seconds=trigger.every_seconds):
                continue
            thread = await asyncio.to_thread(_thread, tickets, install.id, install.owner,
                                             install.agent)
            started += await kernel.event_in("schedule", trigger.value, "schedule", "",
                                             thread, owner=install.owner,
                                             only=install.agent)
    return started


def _thread(tickets: TicketService, installation_id: int, owner: str, agent: str) -> int:
    ref = ("agent_schedule", str(installation_id))
    found = tickets.list(TicketQuery(ref=ref, limit=1)).items
    if found:
        return found[0].id
    ticket, _ = tickets.ask(Actor(f"agent:{agent}@{owner}", Role.AGENT), TicketDraft(
        kind=Kind.INFO, title=f"{agent}: scheduled runs for {owner}", assignee=owner,
        refs={ref[0]: ref[1]}))
    return ticket.id


class ScheduleLoop:
    def __init__(self, kernel: Kernel, store: SqlAgentStore, tickets: TicketService,
                 clock: Clock, tick: float = 30.0) -> None:
        self._args = (kernel, store, tickets, clock)
        self._tick = tick

    async def run(self) -> None:
        while True:
            try:
                await run_due(*self._args)
            except Exception:  # the next tick tries again
                log.exception("scheduled agent runs failed")
            await asyncio.sleep(self._tick)
