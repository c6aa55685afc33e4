"""The small interface every outbound channel implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from tickethub.domain.events import Event
from tickethub.services.ports import Delivery


class DeliveryFailed(Exception):
    """A delivery attempt failed; ``retry_after`` (seconds) is the receiver's wish, if any."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Channel(ABC):
    """An outbound channel: chooses the targets of each event and delivers to one target.

    ``deliver`` must be safe to repeat with the same ``delivery.idempotency_key``: after a
    crash the worker sends an unrecorded delivery again, never a different one.
    """

    name: str

    def refresh(self) -> None:  # noqa: B027 - optional hook
        """Reload configuration (e.g. the list of targets); runs in a worker thread."""

    @property
    def idle(self) -> bool:
        """True while no new event can have a target (e.g. no webhook is registered):
        the worker then skips reading the log. After ``refresh``."""
        return False

    @abstractmethod
    def targets(self, event: Event) -> Sequence[str]:
        """The targets that should receive ``event``; empty when none."""

    @abstractmethod
    async def deliver(self, delivery: Delivery, event: Event) -> None:
        """Deliver ``event`` to ``delivery.target``; raise ``DeliveryFailed`` to retry."""
