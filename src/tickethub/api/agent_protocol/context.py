"""What the Agent Protocol routes need per request: the door's services (built once per
app) and the acting actor.

The spec defines no authentication. The door accepts the hub's bearer tokens; a request
without one acts as the configured anonymous agent only when anonymous access is on
(``ap_anonymous``; by default on exactly when the hub listens on loopback only).
A token that is sent must be valid, anonymous access or not.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from tickethub.api.agent_protocol.batching import GroupCommit
from tickethub.api.deps import bearer_token, call, runtime
from tickethub.domain.actors import Actor, ActorKind, Role
from tickethub.errors import Unauthenticated
from tickethub.server.runtime import HubRuntime
from tickethub.services.agent_tasks import AgentTaskService, TaskInput, TaskView
from tickethub.services.artifacts import ArtifactService
from tickethub.settings import Settings
from tickethub.store.ap_records import SqlApStore
from tickethub.store.artifact_files import FileArtifactStorage


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
    tasks: AgentTaskService
    artifacts: ArtifactService
    anonymous: Actor | None
    creates: GroupCommit[TaskInput, TaskView]

    @classmethod
    def build(cls, hub: HubRuntime) -> ApServices:
        store = SqlApStore(hub.store)
        storage = FileArtifactStorage(hub.settings.data_dir.resolve() / "ap-artifacts")
        anonymous = None
        if anonymous_allowed(hub.settings):
            anonymous = Actor(hub.settings.ap_anonymous_agent, Role.AGENT, ActorKind.AGENT)
        tasks = AgentTaskService(store, hub.clock, hub.bus)
        return cls(
            tasks=tasks,
            creates=GroupCommit(tasks.create_many),
            artifacts=ArtifactService(store, storage, hub.clock,
                                      hub.settings.ap_max_artifact_bytes),
            anonymous=anonymous,
        )


def services(request: Request) -> ApServices:
    state = request.app.state
    found: ApServices | None = getattr(state, "agent_protocol", None)
    if found is None:
        found = ApServices.build(state.hub)
        state.agent_protocol = found
    return found


async def ap_actor(request: Request, hub: HubRuntime = Depends(runtime),
                   svc: ApServices = Depends(services)) -> Actor:
    token = bearer_token(request)
    if token is None and svc.anonymous is not None:
        return svc.anonymous
    if token is None:
        raise Unauthenticated(
            "send 'Authorization: Bearer <token>' (anonymous Agent Protocol access is off)",
            field="Authorization")
    return await call(hub.auth.authenticate, token)


Hub = Annotated[HubRuntime, Depends(runtime)]
Services = Annotated[ApServices, Depends(services)]
Me = Annotated[Actor, Depends(ap_actor)]
