"""The audit line: every action a run takes (or is refused) is a message on the run's
hub ticket, "agent X acting for Y, run Z, because of event E: what", with the structured
who/what/why in the message's data (so the event log carries it, in order)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from tickethub.domain.actors import Actor
from tickethub.services.tickets import TicketService

VIA = "agent"


class AuditTrail:
    def __init__(self, tickets: TicketService, actor: Actor, ticket_id: int, *,
                 agent: str, owner: str, run_id: int, because: str,
                 redact: Callable[[str], str]) -> None:
        self._tickets = tickets
        self._actor = actor
        self.ticket_id = ticket_id
        self._who = {"agent": agent, "owner": owner, "run": run_id, "because": because}
        self._redact = redact

    async def record(self, action: str, outcome: str, why: str = "",
                     **detail: Any) -> None:
        """One audit line; ``outcome`` is ``done``, ``refused``, ``pending``, ``stopped``
        or ``failed``. Secrets are redacted from every text in it."""
        who = self._who
        # Every string at any depth (tool arguments are nested), through JSON.
        clean = json.loads(self._redact(json.dumps(detail, default=str)))
        line = (f"agent {who['agent']} acting for {who['owner']}, run {who['run']}, because "
                f"of {who['because']}: {action} {outcome}")
        if why:
            line += f" — {self._redact(why)}"
        data = {"audit": {**who, "action": action, "outcome": outcome,
                          "why": self._redact(why), "detail": clean}}
        await asyncio.to_thread(self._tickets.post_message, self._actor, self.ticket_id,
                                line, VIA, data=data)
