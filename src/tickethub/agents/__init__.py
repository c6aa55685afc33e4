"""Personal agents: people's own small agents that act for them (docs/personal-agents.md).

The plugin API is :class:`Manifest` (triggers, scopes, configuration schema, budget) and
:class:`PersonalAgent` (``manifest`` plus ``async run(run)``); agents are found through the
entry point group ``tickethub.agents``. The kernel (``kernel.py``) routes events to them.

``task_worker`` and ``task_step`` are the hub's in-hub Agent Protocol worker (a worker of
the AP door, not a personal agent); they stay here until the door takes them.
"""

from tickethub.agents.budget import BudgetExceeded
from tickethub.agents.manifest import Limits, Manifest, Scope, Trigger, TriggerKind
from tickethub.agents.plugin import PersonalAgent
from tickethub.agents.run import Run

__all__ = ["BudgetExceeded", "Limits", "Manifest", "PersonalAgent", "Run", "Scope",
           "Trigger", "TriggerKind"]
