"""Every in-memory fake of a store port is importable from ``tickethub.testing``, as
docs/architecture.md promises plugin and test authors."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import tickethub.testing
from tickethub import store


def _over_the_store(cls: type) -> bool:
    """A fake one builds: the store itself, or a side store made over it (the
    repositories and units of work inside are reached through the store)."""
    if cls.__name__ == "MemoryStore":
        return True
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return bool(parameters) and str(parameters[0].annotation) == "MemoryStore"


def test_every_memory_fake_is_in_tickethub_testing() -> None:
    fakes = set()
    for path in Path(store.__file__).parent.glob("memory_*.py"):
        module = importlib.import_module(f"tickethub.store.{path.stem}")
        fakes |= {name for name, value in vars(module).items()
                  if inspect.isclass(value) and name.startswith("Memory")
                  and value.__module__ == module.__name__ and _over_the_store(value)}
    assert {"MemoryStore", "MemoryChatState", "MemorySavedViews"} <= fakes
    assert fakes - set(tickethub.testing.__all__) == set()
