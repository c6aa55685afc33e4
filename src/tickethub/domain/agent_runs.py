"""Personal agents as stored: an installation (one person's copy of an agent, its
configuration and whether it is on) and a run (one triggered execution, its status and
the budget it used)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class RunStatus(StrEnum):
    RUNNING = "running"
    DONE = "done"  # finished normally
    FAILED = "failed"  # the agent raised or the model failed
    STOPPED = "stopped"  # a budget ran out; the run stopped cleanly


@dataclass(frozen=True, slots=True)
class AgentInstallation:
    """``owner`` is the hub actor the agent acts for; ``identities`` maps a channel to
    the owner's name there (``{"github": "octocat"}``), which is how a trigger knows the
    owner spoke."""

    id: int
    owner: str
    agent: str
    config: dict[str, Any]
    enabled: bool
    identities: dict[str, str]
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class BudgetUse:
    """What a run spent: model calls, model tokens, tool calls, wall seconds, money
    (where the provider reports it)."""

    llm_calls: int = 0
    tokens: int = 0
    tool_calls: int = 0
    seconds: float = 0.0
    cost: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"llm_calls": self.llm_calls, "tokens": self.tokens,
                "tool_calls": self.tool_calls, "seconds": round(self.seconds, 3),
                "cost": self.cost}


@dataclass(frozen=True, slots=True)
class AgentRun:
    """One run. ``ticket_id`` is the hub ticket that carries its audit lines; ``trigger``
    names the event that started it (``github:issue_comment.created``)."""

    id: int
    installation_id: int
    ticket_id: int | None
    trigger: str
    status: RunStatus
    started_at: datetime
    finished_at: datetime | None = None
    used: BudgetUse = field(default_factory=BudgetUse)
    error: str | None = None
