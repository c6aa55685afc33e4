"""What the Agent Protocol routes need per request: the door's services (built once per
app) and the acting actor.

The spec defines no authentication. The door accepts the hub's bearer tokens; a request
without one acts as the configured anonymous agent only when anonymous access is on
(``ap_anonymous``; by default on exactly when the hub listens on loopback only).
A token that is sent must be valid, anonymous access or not.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request

from tickethub.agents.task_step import StepTools
from tickethub.agents.task_worker import HostedTaskWorker, load_handler
from tickethub.api.deps import actor_for, bearer_token, client_address, runtime
from tickethub.domain.actors import Actor, ActorKind, Role
from tickethub.errors import Unauthenticated
from tickethub.services.agent_step_writes import StepWrite, StepWriter, StepWritten
from tickethub.services.agent_tasks import AgentTaskService, TaskInput, TaskView
from tickethub.services.artifacts import ArtifactService
from tickethub.services.doors import AgentProtocolDoor
from tickethub.services.host import Host
from tickethub.settings import Settings
from tickethub.store.ap_records import SqlApStore
from tickethub.store.artifact_files import FileArtifactStorage

log = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def anonymous_allowed(settings: Settings) -> bool:
    if settings.ap_anonymous is not None:
        return settings.ap_anonymous
    return is_loopback(settings.host)


@dataclass(frozen=True)
class ApServices:
    """The door's services. Its writes (task creates, steps, the in-hub worker's
    replies) go into the hub's one group commit (``TicketService.awrite``), with every
    other door's: ``StepWriter`` is added to the hub's write path as a part."""

    tasks: AgentTaskService
    artifacts: ArtifactService
    anonymous: Actor | None
    write: Callable[[Any], Awaitable[Any]]
    worker: HostedTaskWorker | None

    async def create(self, item: TaskInput) -> TaskView:
        """Create a task, group-committed with the hub's other writes."""
        view = await self.write(self.tasks.ask_of(item))
        assert isinstance(view, TaskView)
        return view

    async def step(self, item: StepWrite) -> StepWritten:
        """Post a step (or a reply to one), group-committed with the hub's other writes."""
        written: StepWritten = await self.write(item)
        return written

    @classmethod
    def build(cls, hub: Host) -> ApServices:
        store = SqlApStore(hub.store)
        storage = FileArtifactStorage(hub.settings.data_dir.resolve() / "ap-artifacts")
        anonymous = None
        if anonymous_allowed(hub.settings):
            anonymous = Actor(hub.settings.ap_anonymous_agent, Role.AGENT, ActorKind.AGENT)
        tasks = AgentTaskService(store, hub.clock, hub.bus)
        hub.tickets.add_part(StepWriter(store, hub.clock, hub.bus))
        artifacts = ArtifactService(store, storage, hub.clock,
                                    hub.settings.ap_max_artifact_bytes)
        worker = None
        if hub.settings.ap_worker:
            actor = Actor(hub.settings.ap_worker_name, Role.RESPONDER, ActorKind.AGENT)
            worker = HostedTaskWorker(load_handler(hub.settings.ap_worker),
                                      StepTools(actor, hub.tickets, artifacts, hub.bus),
                                      tasks, hub.tickets.awrite,
                                      hub.settings.ap_worker_concurrency,
                                      lease_seconds=hub.settings.ap_worker_lease_seconds)
        return cls(
            tasks=tasks,
            write=hub.tickets.awrite,
            artifacts=artifacts,
            anonymous=anonymous,
            worker=worker,
        )


def services_of(app: Any) -> ApServices:
    """The door's services of ``app`` (a FastAPI app with ``state.hub``), built once."""
    state = app.state
    found: ApServices | None = getattr(state, "agent_protocol", None)
    if found is None:
        found = ApServices.build(state.hub)
        state.agent_protocol = found
    return found


def services(request: Request) -> ApServices:
    return services_of(request.app)


@asynccontextmanager
async def lifespan(app: Any) -> AsyncIterator[None]:
    """While the hub runs: the in-hub worker (if any) takes the steps an earlier run left
    unanswered at start and keeps its claims on the steps it handles (``task_worker``);
    its handlers are cancelled at stop."""
    worker = services_of(app).worker
    if worker is None:
        yield
        return
    found = await worker.start()
    if found:
        log.info("the in-hub Agent Protocol worker took %d step(s) left unanswered", found)
    try:
        yield
    finally:
        await worker.aclose()


async def ap_actor(request: Request, hub: AgentProtocolDoor = Depends(runtime),
                   svc: ApServices = Depends(services)) -> Actor:
    return await actor_for_token(hub, svc, bearer_token(request),
                                 client_address(request.scope))


async def actor_for_token(hub: AgentProtocolDoor, svc: ApServices, token: str | None,
                          client: str | None = None) -> Actor:
    """Who acts: the token's actor, or the anonymous agent when no token was sent and
    anonymous access is on."""
    if token is None and svc.anonymous is not None:
        return svc.anonymous
    if token is None:
        raise Unauthenticated(
            "send 'Authorization: Bearer <token>' (anonymous Agent Protocol access is off)",
            field="Authorization")
    return await actor_for(hub, token, client)


Hub = Annotated[AgentProtocolDoor, Depends(runtime)]
Services = Annotated[ApServices, Depends(services)]
Me = Annotated[Actor, Depends(ap_actor)]
