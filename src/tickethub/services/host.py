"""What a hub component (a channel, a transport, personal agents, a plugin) is given to
plug itself into the hub, and how it says what it adds.

The composition root (``server/``) implements :class:`Host` and installs every enabled
:class:`Component`, built-ins and plugins alike (``server/components.py``). A component
gets this narrow interface, never the runtime itself, and never imports ``server/``.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from tickethub.services.ports import Clock
from tickethub.services.tickets import TicketService
from tickethub.services.webhooks import WebhookService
from tickethub.settings import Settings

Loop = Callable[[], Coroutine[Any, Any, None]]
"""A background loop: started when the hub runs, cancelled when it stops."""


class Host(Protocol):
    """The hub as a component sees it."""

    @property
    def settings(self) -> Settings: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def tickets(self) -> TicketService: ...

    @property
    def webhooks(self) -> WebhookService:
        """The webhooks admins registered (the webhook channel delivers to them)."""

    @property
    def store(self) -> Any:
        """The SQL store (``store.sql_store.SqlStore``), for the component's own tables."""

    @property
    def bus(self) -> Any:
        """The wake-up bus (``bus/``)."""

    @property
    def http(self) -> Any:
        """The hub's shared ``httpx.AsyncClient`` for outbound calls."""

    def public_url(self, path: str = "") -> str:
        """The URL people and agents reach ``path`` of this hub at."""

    def add_channel(self, channel: Any) -> None:
        """Deliver events through ``channel`` (a ``channels.base.Channel``) while the hub
        runs; one delivery worker each."""

    def add_loop(self, start: Loop) -> None:
        """Run ``start()`` as a background task while the hub runs."""

    def add_door(self, door: Any) -> None:
        """Serve ``door`` (an ``api.doors.Door``: its routes, e.g. the webhook a channel
        is fed by) in the hub's app, after the registered doors."""

    def provide(self, name: str, value: object) -> None:
        """Offer ``value`` under ``name`` to doors and later components (e.g. ``github``:
        the GitHub channel that ``/hooks/github`` feeds)."""

    def provided(self, name: str) -> Any:
        """What a component provided under ``name``; None if nothing was."""


@dataclass(frozen=True)
class Component:
    """A part of the hub that plugs in at start: ``install(host)`` runs when
    ``enabled(settings)`` is true, before the hub runs. Built-ins are components of the
    hub itself; a plugin declares one under the ``tickethub.components`` entry points."""

    name: str
    enabled: Callable[[Settings], bool]
    install: Callable[[Host], object]
