"""Finding agents: the built-ins, then every entry point in the group
``tickethub.agents`` (a package declares
``[project.entry-points."tickethub.agents"] my-agent = "my_agent:agent"``).

The built-ins go through the same loading as third-party agents (datasette's built-ins
are plugins of the app itself). An entry point may name an agent object, or a class or
function that returns one when called without arguments. A plugin that fails to load or
whose manifest is broken is skipped with its reason kept in ``errors``, so one bad
package never stops the hub.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import Any

from tickethub.agents.plugin import PersonalAgent
from tickethub.errors import NotFound

log = logging.getLogger(__name__)

GROUP = "tickethub.agents"
BUILTINS = {
    "comment-rewrite": "tickethub.agents.builtins.comment_rewrite:agent",
    "thread-summary": "tickethub.agents.builtins.thread_summary:agent",
    "issue-manager": "tickethub.agents.builtins.issue_manager:agent",
}


class AgentRegistry:
    def __init__(self) -> None:
        self._agents: dict[str, PersonalAgent] = {}
        self.origins: dict[str, str] = {}  # name -> "builtin" or the distribution
        self.errors: dict[str, str] = {}

    def register(self, agent: PersonalAgent, origin: str = "code") -> None:
        """Add ``agent``; a later registration of the same name replaces it (so a
        person's own package may override a built-in)."""
        if not isinstance(agent, PersonalAgent):
            raise TypeError(f"{agent!r} is not an agent (needs manifest and run)")
        self._agents[agent.manifest.name] = agent
        self.origins[agent.manifest.name] = origin

    def get(self, name: str) -> PersonalAgent:
        try:
            return self._agents[name]
        except KeyError:
            raise NotFound(f"no agent named {name!r}; installed: {sorted(self._agents)}",
                           field="agent") from None

    def names(self) -> list[str]:
        return sorted(self._agents)

    def load(self, target: str, origin: str) -> None:
        """Load ``module:attribute`` and register what it names (errors are kept)."""
        try:
            module_name, _, attr = target.partition(":")
            obj: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
            self.register(_instance(obj), origin)
        except Exception as exc:  # a broken plugin must not stop the hub
            log.warning("agent plugin %s (%s) not loaded: %s", target, origin, exc)
            self.errors[target] = f"{type(exc).__name__}: {exc}"


def _instance(obj: Any) -> Any:
    if hasattr(obj, "manifest") and not isinstance(obj, type):
        return obj
    return obj()


def default_registry(extra: Iterable[str] = ()) -> AgentRegistry:
    """The built-ins, then installed entry points, then ``extra`` (``module:attr``
    strings, e.g. from settings)."""
    registry = AgentRegistry()
    for target in BUILTINS.values():
        registry.load(target, "builtin")
    for ep in entry_points(group=GROUP):
        registry.load(ep.value, ep.dist.name if ep.dist else ep.name)
    for target in extra:
        registry.load(target, "settings")
    return registry
