"""``HubRuntime``: everything one hub process needs, built from ``Settings``.

Construction migrates the database and installs the enabled components
(``server/components.py``: webhooks, GitHub, email, chat, personal agents, plugins),
each through the narrow ``services.host.Host`` interface this class implements.
``async with runtime.running():`` binds the bus to the event loop, makes sure an admin
exists, catches up on deadlines missed while down, and runs the hub's own loops in every
process (deadlines, one delivery worker per channel the components added, the SQLite
checkpoints, the missed-notification sweep) and, in the one process that leads
(``server/leader.py``), the components' loops until the block exits. The hub's own
loops are not components: no setting turns them off and no plugin replaces them.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import httpx

from tickethub.bus.memory import InProcessBus
from tickethub.bus.sweep import MissedNotificationSweep
from tickethub.channels.base import Channel
from tickethub.channels.worker import DeliveryWorker
from tickethub.server import admin_token
from tickethub.server import components as components_registry
from tickethub.server.checkpoint_loop import checkpoint_loop
from tickethub.server.deadline_loop import DeadlineLoop
from tickethub.server.leader import Leadership
from tickethub.server.schema_workers import schema_checker
from tickethub.server.system import SystemClock, TokenGenerator
from tickethub.services.answer_schema import SchemaLimits
from tickethub.services.auth import AuthService
from tickethub.services.deadlines import DeadlineService
from tickethub.services.deliveries import DeliveryService
from tickethub.services.events import EventService
from tickethub.services.host import Component, Loop
from tickethub.services.inbox import InboxService
from tickethub.services.ports import Clock, SecretGenerator
from tickethub.services.read_marks import ReadMarkService
from tickethub.services.saved_views import SavedViewService
from tickethub.services.sessions import SessionService
from tickethub.services.throttle import Throttles
from tickethub.services.tickets import TicketService
from tickethub.services.webhooks import WebhookService
from tickethub.settings import Settings
from tickethub.store.checkpoints import WalCheckpoints
from tickethub.store.engine import make_engine
from tickethub.store.inbox_queries import SqlInboxReader
from tickethub.store.migrate import upgrade
from tickethub.store.sessions_store import SqlSessionStore
from tickethub.store.sql_store import SqlStore
from tickethub.store.web_marks import SqlReadMarks, SqlSavedViews

log = logging.getLogger("tickethub")

SHUTDOWN_GRACE_SECONDS = 5.0


class HubRuntime:
    def __init__(
        self,
        settings: Settings,
        *,
        clock: Clock | None = None,
        secrets: SecretGenerator | None = None,
        components: Iterable[Component] | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock or SystemClock()
        self.secrets = secrets or TokenGenerator()
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.engine = make_engine(settings.effective_database_url)
        upgrade(self.engine)
        self.store = SqlStore(self.engine)
        # SQLite: while serving, the WAL is checkpointed off the commits (event loop).
        self.wal_checkpoints = (WalCheckpoints(self.engine)
                                if self.engine.dialect.name == "sqlite" else None)
        self.bus = self._make_bus()
        self.schemas, self.schema_workers = schema_checker(SchemaLimits(
            settings.schema_max_bytes, settings.schema_max_depth,
            settings.schema_max_subschemas, settings.schema_max_steps,
            settings.schema_value_max_bytes, settings.schema_value_max_depth),
            settings.schema_check_workers)
        self.tickets = TicketService(self.store, self.clock, self.bus, self.schemas)
        self.events = EventService(self.store)
        # Failed sign-ins, links and tokens, throttled (docs/api.md); the processes
        # serving one database tell each other their failures.
        self.throttles = Throttles(
            self.clock, account_attempts=settings.auth_throttle_account_attempts,
            address_attempts=settings.auth_throttle_address_attempts,
            base_seconds=settings.auth_throttle_base_seconds,
            max_seconds=settings.auth_throttle_max_seconds,
            forget_seconds=settings.auth_throttle_forget_seconds)
        self.bus.subscribe("throttles", self.throttles.receive)
        self.throttles.share(functools.partial(self.bus.broadcast, "throttles"))
        self.auth = AuthService(self.store, self.clock, self.secrets,
                                cache_seconds=settings.auth_cache_seconds,
                                throttles=self.throttles)
        # A token revoked through one process stops at once in the others too.
        self.bus.subscribe("token_revocations", self.auth.forget_checked)
        self.auth.share_revocations(functools.partial(self.bus.broadcast,
                                                      "token_revocations"))
        self.deadlines = DeadlineService(self.store, self.clock, self.bus)
        self.webhooks = WebhookService(self.store, self.clock, self.secrets)
        # web inbox: people's sign-in and the inbox queries
        self.sessions = SessionService(SqlSessionStore(self.store), self.clock, self.secrets,
                                       settings.session_ttl_seconds, self.throttles)
        self.inbox = InboxService(SqlInboxReader(self.store), self.events.last_seq)
        self.reads = ReadMarkService(SqlReadMarks(self.store), self.clock)
        self.saved_views = SavedViewService(SqlSavedViews(self.store), self.clock)
        self.deliveries = DeliveryService(
            self.store, self.clock,
            max_attempts=settings.delivery_max_attempts,
            backoff_seconds=settings.delivery_backoff_seconds,
            backoff_max_seconds=settings.delivery_backoff_max_seconds,
            attempt_seconds=settings.delivery_timeout_seconds,
        )
        self.http = httpx.AsyncClient(timeout=settings.delivery_timeout_seconds)
        self.channels: list[Channel] = []  # the components add theirs (add_channel)
        self.generated_admin_token: str | None = None
        self._tasks: list[asyncio.Task[None]] = []
        # What components add: background loops (e.g. GitHub's webhook inbox and poller)
        # and what they provide to the doors (e.g. ``github``, ``chat_hooks``).
        self.loops: list[Loop] = []
        self.doors: list[Any] = []  # ``api.doors.Door``s, served after the registered ones
        self.leadership: Leadership | None = None
        self._provided: dict[str, object] = {}
        self.components = components_registry.install(
            self, settings, components_registry.registered() if components is None
            else components)

    @property
    def github(self) -> Any:
        """The GitHub channel (channels/github), if it is on."""
        return self._provided.get("github")

    @property
    def chat_hooks(self) -> dict[str, Any]:
        """The webhook chat transports (channels/chat_hooks) by name."""
        hooks: dict[str, Any] = self._provided.get("chat_hooks", {})  # type: ignore[assignment]
        return hooks

    @property
    def agents(self) -> Any:
        """Personal agents (agents/), if they are on."""
        return self._provided.get("agents")

    def provide(self, name: str, value: object) -> None:
        """Offer ``value`` under ``name`` to the doors and later components."""
        self._provided[name] = value

    def provided(self, name: str) -> Any:
        return self._provided.get(name)

    def add_loop(self, start: Loop) -> None:
        """Run ``start()`` as a background task while the hub runs; call before
        ``running()``."""
        self.loops.append(start)

    def _make_bus(self) -> InProcessBus:
        """LISTEN/NOTIFY on PostgreSQL (so several hub processes wake each other's
        waiters), else the in-process bus."""
        choice = self.settings.bus
        postgres = self.engine.dialect.name == "postgresql"
        if choice == "postgres" or (choice == "auto" and postgres):
            from tickethub.bus.postgres import PostgresBus

            return PostgresBus(self.engine.url)
        return InProcessBus()

    def add_door(self, door: Any) -> None:
        """Serve ``door`` in the hub's app (``api/app.create_app`` mounts it after the
        registered doors); call before the app is built."""
        self.doors.append(door)

    def add_channel(self, channel: Channel) -> None:
        """Register an outbound channel; call before ``running()``."""
        self.channels.append(channel)

    def public_url(self, path: str = "") -> str:
        return self.settings.effective_public_url + path

    @asynccontextmanager
    async def running(self) -> AsyncIterator[HubRuntime]:
        self.bus.bind(asyncio.get_running_loop())
        # Doors in worker threads join the event loop's group commit (one write path).
        self.tickets.bind(asyncio.get_running_loop())
        await self.bus.start()
        self.bus.last_seq = await asyncio.to_thread(self.events.last_seq)
        await asyncio.to_thread(self.store.analyze)  # planner statistics, once per start
        admin = self.settings.admin_token
        self.generated_admin_token = await asyncio.to_thread(
            self.auth.bootstrap_admin, admin.get_secret_value() if admin else None
        )
        if self.generated_admin_token:
            # Said before the port is bound, so a start that fails there loses nothing.
            saved = admin_token.save(self.settings.data_dir, self.generated_admin_token)
            log.warning("generated the admin token; saved to %s (readable by you only)",
                        saved)
        caught_up = await asyncio.to_thread(self.deadlines.run_due)
        if caught_up:
            log.info("expired %d ticket(s) whose deadline passed while the hub was down",
                     len(caught_up))
        loops = [DeadlineLoop(self.deadlines, self.clock, self.bus,
                              self.settings.deadline_check_max_seconds).run()]
        loops += [
            DeliveryWorker(channel, self.deliveries, self.bus,
                           self.settings.delivery_poll_seconds).run()
            for channel in self.channels
        ]
        if self.wal_checkpoints is not None:
            loops.append(checkpoint_loop(self.wal_checkpoints))
        if self.bus.shared:  # other processes notify this one: a lost NOTIFY is found
            loops.append(MissedNotificationSweep(self.bus, self.events,
                                                 self.settings.bus_sweep_seconds).run())
        # The components' loops run once among the processes on one database (leader.py).
        postgres = self.engine.dialect.name == "postgresql"
        self.leadership = Leadership(self.engine.url if postgres else None, self.loops)
        loops.append(self.leadership.run())
        self._tasks = [asyncio.create_task(loop) for loop in loops]
        try:
            yield self
        finally:
            self.bus.close()
            for task in self._tasks:
                task.cancel()
            # A loop stuck in a worker thread cannot be cancelled; don't let it hold the
            # shutdown (its thread ends with the process).
            stuck: set[asyncio.Task[None]] = set()
            if self._tasks:
                _, stuck = await asyncio.wait(self._tasks, timeout=SHUTDOWN_GRACE_SECONDS)
            for task in stuck:
                log.warning("background task %s did not stop within %ss",
                            task.get_name(), SHUTDOWN_GRACE_SECONDS)
            self._tasks = []
            await self.bus.stop()
            self.bus.unbind()
            self.tickets.bind(None)
            await self.http.aclose()

    def close(self) -> None:
        if self.schema_workers is not None:
            self.schema_workers.close()
        self.store.close()
        self.engine.dispose()
