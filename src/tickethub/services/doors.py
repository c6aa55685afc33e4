"""What each door (``api/``, ``web/``) is given: small interfaces, one per door, instead
of the whole runtime as a service locator.

The composition root (``server/``) builds the hub and hands it to ``api.app.create_app``
as an :class:`AppHub`; a door's handlers ask for the interface they need (the native
tickets door a :class:`TicketsDoor`: the write path, reads, sign-in and the bus's waits)
and see nothing else. ``server.runtime.HubRuntime`` provides them all; a test may
provide only the one its door needs. Doors never import ``server/``
(``tests/test_layers.py``), as components see only ``services.host.Host``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from tickethub.bus.memory import InProcessBus
from tickethub.services.answer_schema import SchemaChecker
from tickethub.services.auth import AuthService
from tickethub.services.deliveries import DeliveryService
from tickethub.services.events import EventService
from tickethub.services.inbox import InboxService
from tickethub.services.ports import Clock
from tickethub.services.read_marks import ReadMarkService
from tickethub.services.saved_views import SavedViewService
from tickethub.services.sessions import SessionService
from tickethub.services.throttle import Throttles
from tickethub.services.tickets import TicketService
from tickethub.services.webhooks import WebhookService
from tickethub.settings import Settings


class Door(Protocol):
    """What every door may use: settings, the clock, sign-in (bearer token to actor),
    the bus (waits for changes, parked-waiter counts) and the hub's public URL."""

    @property
    def settings(self) -> Settings: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def auth(self) -> AuthService: ...

    @property
    def bus(self) -> InProcessBus:
        """Waits for ticket changes and events (``bus/``; ``PostgresBus`` across processes)."""

    def public_url(self, path: str = "") -> str:
        """The URL people and agents reach ``path`` of this hub at."""


class TicketsDoor(Door, Protocol):
    """The ticket doors (native API, MCP, OpenAI, triage forms): the one write path and
    the reads of ``TicketService``."""

    @property
    def tickets(self) -> TicketService: ...


class EventsDoor(Door, Protocol):
    """``/events`` and live pages: the event log."""

    @property
    def events(self) -> EventService: ...


class AgentProtocolDoor(TicketsDoor, Protocol):
    """The Agent Protocol door: tickets, plus the store its task and step tables live in
    (``store/ap_records.py``)."""

    @property
    def store(self) -> Any:
        """The SQL store (``store.sql_store.SqlStore``)."""


class AdminDoor(Door, Protocol):
    """Admin endpoints: webhooks and their deliveries."""

    @property
    def webhooks(self) -> WebhookService: ...

    @property
    def deliveries(self) -> DeliveryService: ...


class HooksDoor(TicketsDoor, Protocol):
    """Inbound webhooks: what components provided for them (GitHub, chat transports,
    personal agents), each ``None`` or empty when off."""

    @property
    def github(self) -> Any: ...

    @property
    def chat_hooks(self) -> dict[str, Any]: ...

    @property
    def agents(self) -> Any: ...


class MetricsDoor(Door, Protocol):
    """``/metrics``: the database engine (pool), delivery channels and throttles."""

    @property
    def engine(self) -> Any: ...

    @property
    def channels(self) -> Sequence[Any]: ...

    @property
    def throttles(self) -> Throttles: ...


class WebDoor(TicketsDoor, EventsDoor, Protocol):
    """The web inbox: people's sessions, inbox queries, read marks, saved views and the
    answer-schema checker for forms."""

    @property
    def sessions(self) -> SessionService: ...

    @property
    def inbox(self) -> InboxService: ...

    @property
    def reads(self) -> ReadMarkService: ...

    @property
    def saved_views(self) -> SavedViewService: ...

    @property
    def schemas(self) -> SchemaChecker: ...


class Leading(Protocol):
    @property
    def leading(self) -> bool:
        """Whether this process runs the loops only one process of the hub may run."""


class AppHub(AgentProtocolDoor, AdminDoor, HooksDoor, MetricsDoor, WebDoor, Protocol):
    """Everything the app's doors need, and ``running()``: the hub's background loops,
    run for the app's lifespan."""

    @property
    def leadership(self) -> Leading | None:
        """This process's part in the election among the hub's processes (``None``
        before ``running()`` starts it); ``/healthz`` reports it."""

    @property
    def doors(self) -> Sequence[Any]:
        """The doors components added (``Host.add_door``), served after the
        registered ones."""

    def running(self) -> AbstractAsyncContextManager[Any]: ...
