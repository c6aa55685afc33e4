"""Tasks and steps: create/list/get task, execute/list/get step, and the extension
stream of a task's steps (``GET .../steps/stream``, Server-Sent Events)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import TypeAdapter, ValidationError

from tickethub.api.agent_protocol.context import (
    ApServices,
    Hub,
    Me,
    Services,
    actor_for_token,
    services_of,
)
from tickethub.api.agent_protocol.errors import AgentProtocolRoute
from tickethub.api.agent_protocol.schemas import (
    NotFoundMessage,
    Step,
    StepRequestBody,
    Task,
    TaskListResponse,
    TaskRequestBody,
    TaskStepsListResponse,
    pagination,
    step_out,
    task_out,
)
from tickethub.api.deps import bearer_of, call, client_address
from tickethub.api.direct_routes import DirectRequest, direct
from tickethub.api.responses import FastJSONResponse
from tickethub.domain.actors import Actor
from tickethub.domain.status import Status
from tickethub.errors import ValidationFailed
from tickethub.ops.series import parked
from tickethub.services.agent_step_writes import PostedStep, StepInput
from tickethub.services.agent_steps import open_state
from tickethub.services.agent_tasks import REF_INPUT, StepView, TaskFilter, TaskInput
from tickethub.services.doors import AgentProtocolDoor

router = APIRouter(route_class=AgentProtocolRoute, tags=["agent"])

NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": NotFoundMessage, "description": "Unable to find entity with a given "
          "identifier"}}
INVALID: dict[int | str, dict[str, Any]] = {
    422: {"description": "Unable to process request: an invalid or malformed body or "
          "parameter; `field` names it."}}
Page = Annotated[int, Query(ge=1, le=2**31 - 1, description="Page number")]
PageSize = Annotated[int, Query(ge=1, le=1000, description="Number of items per page")]
_LIST_PARAMS = frozenset({"current_page", "page_size", "status", "label", "include"})
_TASK_BODY: TypeAdapter[TaskRequestBody | None] = TypeAdapter(TaskRequestBody | None)
_STEP_BODY: TypeAdapter[StepRequestBody | None] = TypeAdapter(StepRequestBody | None)


def waiting_for_human(hub: AgentProtocolDoor, ticket_id: int) -> dict[str, Any]:
    """Where a person answers: the ticket in the API and in the web inbox."""
    return {"ticket_id": ticket_id, "url": hub.public_url(f"/api/v1/tickets/{ticket_id}"),
            "html_url": hub.public_url(f"/t/{ticket_id}")}


def _with_steps(include: str | None) -> bool:
    if include is None or include == "":
        return False
    if include != "steps":
        raise ValidationFailed("include may only be 'steps'", field="include")
    return True


async def _direct_body(request: DirectRequest, adapter: TypeAdapter[Any]
                       ) -> tuple[ApServices, Actor, Any]:
    """The door's services, the actor and the validated body of a direct request, with
    the route's order of refusals: a body that is not JSON at all first, then the token,
    then a body that does not fit the model."""
    invalid = None
    try:
        body = adapter.validate_json(request.body or b"null")
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            raise
        invalid = exc
    svc = services_of(request.app)
    token = bearer_of(request.headers.get(b"authorization", b"").decode("latin-1"))
    me = await actor_for_token(request.app.state.hub, svc, token,
                               client_address(request.scope))
    if invalid is not None:
        raise invalid
    return svc, me, body


async def _create_direct(request: DirectRequest) -> dict[str, Any]:
    return await create(*await _direct_body(request, _TASK_BODY))


async def _execute_direct(request: DirectRequest) -> dict[str, Any]:
    svc, me, body = await _direct_body(request, _STEP_BODY)
    return await execute(request.app.state.hub, svc, me, request.path_params["task_id"],
                         body)


@router.post("/agent/tasks", operation_id="createAgentTask", response_model=Task,
             responses=INVALID, summary="Creates a task for the agent.")
@direct(_create_direct)
async def create_task(svc: Services, me: Me, body: TaskRequestBody | None = None
                      ) -> FastJSONResponse:
    """The task becomes a ticket of kind ``task`` (its id in the ticket's refs as
    ``ap_task_id``), for a person or an agent worker to take."""
    return FastJSONResponse(await create(svc, me, body))


async def create(svc: ApServices, me: Actor, body: TaskRequestBody | None) -> dict[str, Any]:
    """Create a task (group-committed); the Task as the spec shapes it."""
    body = body or TaskRequestBody()
    view = await svc.create(TaskInput(me, body.input, body.additional_input))
    return task_out(view)


@router.get("/agent/tasks", operation_id="listAgentTasks", response_model=TaskListResponse,
            responses=INVALID, summary="List all tasks that have been created for the agent.")
async def list_tasks(
    request: Request, hub: Hub, svc: Services, me: Me,
    current_page: Page = 1, page_size: PageSize = 10,
    status: Annotated[list[Status] | None, Query(
        description="Extension: only tasks whose ticket has this status (repeatable).")
    ] = None,
    label: Annotated[str | None, Query(max_length=100,
                                       description="Extension: only tasks with this label.")
                     ] = None,
    include: Annotated[str | None, Query(description="Extension: 'steps' adds each task's "
                                         "steps.")] = None,
) -> FastJSONResponse:
    """Oldest first. Any other query parameter filters on that ``additional_input`` key
    (extension), e.g. ``?app_id=checkout``."""
    inputs = tuple(
        (REF_INPUT + key, value) for key, value in request.query_params.multi_items()
        if key not in _LIST_PARAMS
    )
    filters = TaskFilter(status=tuple(status or ()), label=label, inputs=inputs)
    views, total = await call(svc.tasks.page, filters, (current_page - 1) * page_size,
                              page_size, with_steps=_with_steps(include), viewer=me)
    tasks = [task_out(v, waiting_for_human(hub, v.ticket.id)) for v in views]
    return FastJSONResponse({"tasks": tasks,
                         "pagination": pagination(total, current_page, page_size)})


@router.get("/agent/tasks/{task_id}", operation_id="getAgentTask", response_model=Task,
            responses={**NOT_FOUND, **INVALID},
            summary="Get details about a specified agent task.")
async def get_task(task_id: str, hub: Hub, svc: Services, me: Me,
                   include: Annotated[str | None, Query(
                       description="Extension: 'steps' adds the task's steps.")] = None,
                   ) -> FastJSONResponse:
    view = await call(svc.tasks.get, task_id, with_steps=_with_steps(include), viewer=me)
    return FastJSONResponse(task_out(view, waiting_for_human(hub, view.ticket.id)))


@router.get("/agent/tasks/{task_id}/steps", operation_id="listAgentTaskSteps",
            response_model=TaskStepsListResponse, responses={**NOT_FOUND, **INVALID},
            summary="List all steps for the specified task.")
async def list_steps(task_id: str, hub: Hub, svc: Services, me: Me,
                     current_page: Page = 1, page_size: PageSize = 10) -> FastJSONResponse:
    ticket, steps = await call(svc.tasks.steps, task_id, me)
    start = (current_page - 1) * page_size
    waiting = waiting_for_human(hub, ticket.id)
    return FastJSONResponse({
        "steps": [step_out(s, waiting) for s in steps[start:start + page_size]],
        "pagination": pagination(len(steps), current_page, page_size),
    })


async def hold_for_reply(hub: AgentProtocolDoor, svc: Any, task_id: str, step_id: str,
                         ticket_id: int, seconds: float, posted: PostedStep | None = None
                         ) -> StepView:
    """The step once it completes, or as it is after ``seconds``. Registers for the
    ticket's changes before each read, so a reply stored in between still wakes it.
    With the step just ``posted``, the first read is skipped when the bus saw nothing
    happen to the ticket since (the step is running, as stored)."""
    view: StepView
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    with parked("ap_hold"):
        while True:
            with hub.bus.ticket_signal(ticket_id) as changed:
                if posted is not None and hub.bus.quiet_since(ticket_id, posted.seq):
                    view = StepView(open_state(posted.step, None), task_id)
                else:
                    _, view = await call(svc.tasks.step, task_id, step_id)
                posted = None
                remaining = deadline - loop.time()
                if view.state.status == "completed" or remaining <= 0 or hub.bus.closing:
                    return view
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed, remaining)


@router.post("/agent/tasks/{task_id}/steps", operation_id="executeAgentTaskStep",
             response_model=Step, responses={**NOT_FOUND, **INVALID, 409: {
                 "description": "The task is finished; nothing was changed."}},
             summary="Execute a step in the specified agent task.")
@direct(_execute_direct)
async def execute_step(task_id: str, hub: Hub, svc: Services, me: Me,
                       body: StepRequestBody | None = None) -> FastJSONResponse:
    """Posts the step's input on the task's ticket and holds up to
    ``ap_step_hold_seconds`` for a reply. Without one in time the step comes back
    ``running``, with ``additional_output.waiting_for_human`` naming the ticket; a later
    GET of the step shows it completed once the reply lands."""
    return FastJSONResponse(await execute(hub, svc, me, task_id, body))


async def execute(hub: AgentProtocolDoor, svc: ApServices, me: Actor, task_id: str,
                  body: StepRequestBody | None) -> dict[str, Any]:
    """Post a step (group-committed) and hold for its reply; the Step as the spec shapes
    it. With an agent worker inside the hub (``ap_worker``) the step goes straight to it;
    a step it leaves unanswered waits for a reply through any channel as usual."""
    body = body or StepRequestBody()
    item = StepInput(me, task_id, body.input, body.additional_input)
    loop = asyncio.get_running_loop()
    hold = hub.settings.ap_step_hold_seconds
    deadline = loop.time() + hold
    posted: PostedStep | None = None
    if svc.worker is not None:
        taken = await svc.worker.take(item, hold)
        step_id, ticket_id, view = taken.step_id, taken.ticket_id, taken.view
    else:
        written = await svc.step(item)
        assert isinstance(written, PostedStep)
        posted = written
        step_id, ticket_id, view = posted.step.step_id, posted.ticket.id, None
    if view is None:
        view = await hold_for_reply(hub, svc, task_id, step_id, ticket_id,
                                    max(0.0, deadline - loop.time()), posted)
    waiting = None if view.state.status == "completed" else waiting_for_human(hub, ticket_id)
    return step_out(view, waiting)


def _sse(view: StepView, hub: AgentProtocolDoor, ticket_id: int) -> str:
    data = json.dumps(step_out(view, waiting_for_human(hub, ticket_id)))
    return f"id: {view.state.step_id}:{view.state.status}\nevent: step\ndata: {data}\n\n"


@router.get("/agent/tasks/{task_id}/steps/stream", operation_id="streamAgentTaskSteps",
            response_class=StreamingResponse, responses=NOT_FOUND,
            summary="Extension: a task's steps as Server-Sent Events.")
async def stream_steps(task_id: str, hub: Hub, svc: Services, me: Me) -> StreamingResponse:
    """Sends every step now (``event: step``, data = the Step), then each step again
    whenever it changes (new, completed, is_last). Ends after the task's ticket is
    resolved and its last step was sent; sends keep-alive comments meanwhile."""
    ticket, _ = await call(svc.tasks.steps, task_id, me)  # 404 before the stream starts
    keepalive = hub.settings.sse_keepalive_seconds

    async def body() -> AsyncIterator[str]:
        sent: dict[str, tuple[str, bool]] = {}
        yield "retry: 1000\n\n"
        while True:
            # Register before reading, so a change right after the read still wakes us.
            with hub.bus.ticket_signal(ticket.id) as changed:
                current, steps = await call(svc.tasks.steps, task_id)
                resolved = not current.waiting
                for view in steps:
                    key = (view.state.status, view.state.is_last)
                    if sent.get(view.state.step_id) != key:
                        sent[view.state.step_id] = key
                        yield _sse(view, hub, ticket.id)
                if resolved:
                    yield "event: end\ndata: {}\n\n"
                    return
                if hub.bus.closing:
                    return  # shutdown: no `end` event, so the client reconnects
                try:
                    await asyncio.wait_for(changed, keepalive)
                except TimeoutError:
                    yield ": keep-alive\n\n"

    return StreamingResponse(body(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.get("/agent/tasks/{task_id}/steps/{step_id}", operation_id="getAgentTaskStep",
            response_model=Step, responses=NOT_FOUND,
            summary="Get details about a specified task step.")
async def get_step(task_id: str, step_id: str, hub: Hub, svc: Services, me: Me
                   ) -> FastJSONResponse:
    ticket, view = await call(svc.tasks.step, task_id, step_id, me)
    return FastJSONResponse(step_out(view, waiting_for_human(hub, ticket.id)))
