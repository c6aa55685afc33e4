"""The plugin API: what a personal agent is.

An agent is any object with a ``manifest`` (:class:`~tickethub.agents.manifest.Manifest`)
and an ``async run(run)`` method. Third-party agents are found through the Python entry
point group ``tickethub.agents`` (see ``agents/registry.py``); the built-in agents are
registered through the same path. A minimal agent::

    from tickethub.agents import Manifest, Run

    class Shout:
        manifest = Manifest.parse({"name": "shout", "triggers": ["/shout"],
                                   "scopes": ["comment"]})

        async def run(self, run: Run) -> None:
            await run.call("comment", body=run.event.text.upper())
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from tickethub.agents.manifest import Manifest
from tickethub.agents.run import Run


@runtime_checkable
class PersonalAgent(Protocol):
    manifest: Manifest

    async def run(self, run: Run) -> None:
        """Act on ``run.event``. Raising ``BudgetExceeded`` (from ``run.complete`` or
        ``run.call``) stops the run cleanly; any other exception marks it failed."""
        ...
