"""The Agent Protocol v1 door (``/ap/v1``): any Agent Protocol client hands tasks to
people and agents through tickets. See docs/agent-protocol.md."""

from fastapi import APIRouter

from tickethub.api.agent_protocol import artifacts, tasks
from tickethub.api.agent_protocol.context import lifespan
from tickethub.api.agent_protocol.errors import ERROR_SCHEMA
from tickethub.api.problem_docs import error_responses

PREFIX = "/ap/v1"

# Every error of this door has the shape of ``errors.agent_protocol_json``.
router = APIRouter(prefix=PREFIX, responses=error_responses(
    ERROR_SCHEMA, statuses=(400, 401, 403, 404, 409, 413, 422, 429, 500)))
router.include_router(tasks.router)
router.include_router(artifacts.router)

__all__ = ["PREFIX", "lifespan", "router"]
