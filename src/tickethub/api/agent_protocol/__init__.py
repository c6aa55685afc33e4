"""The Agent Protocol v1 door (``/ap/v1``): any Agent Protocol client hands tasks to
people and agents through tickets. See docs/agent-protocol.md."""

from fastapi import APIRouter

from tickethub.api.agent_protocol import artifacts, tasks
from tickethub.api.agent_protocol.context import lifespan
from tickethub.api.agent_protocol.fast_lane import FastLane

PREFIX = "/ap/v1"

router = APIRouter(prefix=PREFIX)
router.include_router(tasks.router)
router.include_router(artifacts.router)

__all__ = ["PREFIX", "FastLane", "lifespan", "router"]
