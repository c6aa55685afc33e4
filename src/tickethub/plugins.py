"""What installed plugins offer the hub: the objects under an entry-point group, each
checked to be of the kind the group promises (a ``Component``, a ``Door``)."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import TypeVar

T = TypeVar("T")


def offered(group: str, kind: type[T]) -> list[T]:
    """Each object the ``group`` entry points name, loaded, in the order installed;
    ``TypeError`` naming the entry point for one that is not a ``kind`` (a broken
    plugin stops the start with one clear line rather than failing later)."""
    found = []
    for point in entry_points(group=group):
        value = point.load()
        if not isinstance(value, kind):
            raise TypeError(f"entry point {point.name} ({point.value}) is not a "
                            f"{kind.__name__}")
        found.append(value)
    return found
