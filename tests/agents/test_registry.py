"""Discovery: built-ins and ``tickethub.agents`` entry points load the same way; a
broken plugin is skipped with its reason."""

from __future__ import annotations

import sys
import types
from importlib.metadata import EntryPoint

import pytest

from tickethub.agents import Manifest
from tickethub.agents import registry as registry_module
from tickethub.agents.registry import BUILTINS, default_registry
from tickethub.errors import NotFound


class Echo:
    manifest = Manifest.parse({"name": "echo", "triggers": ["/echo"], "scopes": ["comment"]})

    async def run(self, run: object) -> None:
        return None


def test_builtins_and_entry_points_and_broken_plugins(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    module = types.ModuleType("fake_agent_pkg")
    module.Echo = Echo  # type: ignore[attr-defined]
    module.not_an_agent = object()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_agent_pkg", module)
    eps = [EntryPoint("echo", "fake_agent_pkg:Echo", registry_module.GROUP),
           EntryPoint("bad", "fake_agent_pkg:not_an_agent", registry_module.GROUP),
           EntryPoint("gone", "no_such_module:agent", registry_module.GROUP)]
    monkeypatch.setattr(registry_module, "entry_points",
                        lambda group: [e for e in eps if e.group == group])
    registry = default_registry()
    assert set(registry.names()) == {*BUILTINS, "echo"}
    assert registry.origins["comment-rewrite"] == "builtin"
    assert registry.get("echo").manifest.commands() == {"echo"}
    assert set(registry.errors) == {"fake_agent_pkg:not_an_agent", "no_such_module:agent"}
    with pytest.raises(NotFound) as raised:
        registry.get("nope")
    assert raised.value.field == "agent"
