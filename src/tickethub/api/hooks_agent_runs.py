"""The Actions runner's two doors (``agents/runners/actions.py``):

* ``GET /hooks/agents/runs/{run_id}/context?expires=&signature=`` — the built context
  of a run waiting for its workflow, to the bearer of the signed URL the dispatch carried;
  expired or tampered: 401 naming ``expires`` or ``signature``.
* ``POST /hooks/agents/runs/{run_id}/result`` — the workflow's typed result, signed with
  the run's ``result_key`` in ``X-Tickethub-Signature``; 202 once taken (the hub applies
  its actions through the run's toolbox). A forged signature is 401, a body that is not a
  ``RunResult`` 422 naming the field, a replay or a result after the run timed out 409.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from tickethub.agents.runners.actions import ActionsRunner
from tickethub.agents.runners.grants import SIGNATURE_HEADER
from tickethub.api.deps import runtime
from tickethub.api.problem_docs import PROBLEM_RESPONSES
from tickethub.errors import Unavailable
from tickethub.services.doors import HooksDoor

router = APIRouter(tags=["agents"], responses=PROBLEM_RESPONSES)
_REFUSED: dict[int | str, dict[str, Any]] = {
    401: {"description": "Bad, expired or missing signature"},
    404: {"description": "No such run waits for a workflow"},
    409: {"description": "The run no longer waits (reported, or timed out)"}}


def _runner(hub: HooksDoor) -> ActionsRunner:
    runner = hub.agents.kernel.actions if hub.agents is not None else None
    if not isinstance(runner, ActionsRunner):
        raise Unavailable("personal agents are off (TICKETHUB_AGENTS_ENABLED)")
    return runner


@router.get("/hooks/agents/runs/{run_id}/context", summary="An Actions run's context",
            responses=_REFUSED)
async def run_context(run_id: int, expires: int = Query(...), signature: str = Query(...),
                      hub: HooksDoor = Depends(runtime)) -> Any:
    return JSONResponse(_runner(hub).context(run_id, expires, signature),
                        headers={"Cache-Control": "no-store"})


@router.post("/hooks/agents/runs/{run_id}/result", summary="An Actions run's result",
             status_code=202, responses={**_REFUSED, 422: {"description": "Not a result"}})
async def run_result(run_id: int, request: Request,
                     hub: HooksDoor = Depends(runtime)) -> Any:
    result = _runner(hub).accept(run_id, await request.body(),
                                 request.headers.get(SIGNATURE_HEADER))
    return JSONResponse({"run_id": run_id, "status": result.status,
                         "actions": len(result.actions)}, status_code=202)
