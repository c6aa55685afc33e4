"""``HeldWrites``: holds the hub's one group commit on its first transaction, so writes
from other doors queue behind it, and records what each batch held (for tests that
show a door's writes share the hub's transactions: a door that bypasses the group
commit never shows up in ``batches``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from tests.waiting import eventually
from tickethub.server.runtime import HubRuntime


def kind_of(item: Any) -> str:
    """An item's kind: its type's name, with an ``Ask``'s companion (an AP create is
    ``Ask+TaskCompanion``)."""
    companion = getattr(item, "companion", None)
    name = type(item).__name__
    return f"{name}+{type(companion).__name__}" if companion is not None else name


class HeldWrites:
    """Wraps the hub's group commit's commit function: records each batch's item kinds,
    and holds the first transaction open until ``release`` so others queue behind it."""

    def __init__(self, hub: HubRuntime) -> None:
        grouped = hub.tickets._grouped
        self._commit = grouped._commit
        self.batches: list[list[str]] = []
        self._entered = threading.Event()
        self._gate = threading.Event()
        grouped._commit = self  # type: ignore[assignment]
        # Holding a transaction open needs the thread path: an inline (event loop)
        # commit would hold the loop itself, and nothing could queue behind it.
        grouped._inline = None
        self._grouped = grouped

    def __call__(self, items: Sequence[Any]) -> Any:
        if not self.batches:
            self._entered.set()
            self._gate.wait(10)
        self.batches.append([kind_of(item) for item in items])
        return self._commit(items)

    def release(self) -> None:
        self._gate.set()

    async def holding(self) -> None:
        await eventually(self._entered.is_set, "the first transaction to start",
                         seconds=10, every=0.01)

    async def queued(self, n: int) -> None:
        await eventually(lambda: len(self._grouped._queue) >= n,
                         f"{n} writes to join the queue", seconds=10, every=0.01)

