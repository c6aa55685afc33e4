"""The registry of hub components: the built-ins, then plugins, installed the same way.

A component (``services/host.py``: ``Component(name, enabled, install)``) plugs a
channel, a transport or a worker into the hub through the narrow :class:`Host`
interface. The built-ins are components of the hub itself, listed in :data:`BUILTINS`
in the order they install (personal agents after GitHub, which they hook into); a
plugin offers one under the ``tickethub.components`` entry points, and is installed
after them. Like datasette's ``DEFAULT_PLUGINS``: one mechanism for both.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable

from tickethub import plugins
from tickethub.services.host import Component, Host
from tickethub.settings import Settings

log = logging.getLogger(__name__)

ENTRY_POINTS = "tickethub.components"
BUILTINS = (
    "tickethub.channels.webhook:component",
    "tickethub.channels.github:component",
    "tickethub.channels.email:component",
    "tickethub.channels.matrix:component",
    "tickethub.channels.chat_hooks:component",
    "tickethub.agents.component:component",
)


def _load(target: str) -> Component:
    module, _, name = target.partition(":")
    found = getattr(importlib.import_module(module), name)
    if not isinstance(found, Component):
        raise TypeError(f"{target} is not a tickethub Component")
    return found


def registered() -> list[Component]:
    """Every component: the built-ins, then those of installed plugins."""
    return [_load(target) for target in BUILTINS] + plugins.offered(ENTRY_POINTS, Component)


def install(host: Host, settings: Settings, components: Iterable[Component]) -> list[str]:
    """Install each enabled component on ``host``, in order; their names."""
    installed = []
    for component in components:
        if component.enabled(settings):
            component.install(host)
            installed.append(component.name)
            log.debug("component %s installed", component.name)
    return installed
