"""The FastAPI application: every door (``api/doors.py``: the built-ins, then plugins')
mounted on one app, one route table, errors mapped in one place (``api/problems.py``).
Every request goes through the same middleware stack; the few hot operations with a
direct handler (``api/direct_routes.py``) skip only the router's per-request work."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import FastAPI

from tickethub import __version__
from tickethub.api import docs_pages, doors, problems
from tickethub.api.deps import call
from tickethub.api.direct_routes import DirectRoutes
from tickethub.api.limits import BodySizeLimit
from tickethub.api.problem_docs import PROBLEM_RESPONSES
from tickethub.ops.request_id import RequestIds
from tickethub.services.doors import AppHub

DESCRIPTION = """
Agents ask people through tickets and wait; people answer from wherever they are.

Authenticate with `Authorization: Bearer <token>`. Errors are `application/problem+json`
with a stable `code` and the `field` at fault.
"""


def create_app(hub: AppHub, mounted: Sequence[doors.Door] | None = None) -> FastAPI:
    """The ASGI app for ``hub`` with the doors ``mounted`` (default: every registered
    one, ``doors.registered()``), in order, then those the hub's components added
    (``hub.doors``). Its lifespan runs the hub's background loops and the doors'
    lifespan hooks."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with hub.running(), AsyncExitStack() as doors:
            for hook in app.state.lifespan_hooks:  # doors with background work of their own
                await doors.enter_async_context(hook(app))
            yield

    telemetry = hub.settings.telemetry  # off: FastAPI skips its per-request check
    app = FastAPI(title="tickethub", version=__version__, description=DESCRIPTION,
                 lifespan=lifespan, telemetry={"tracing": telemetry, "metrics": telemetry,
                                               "logs": telemetry},
                 docs_url=None, redoc_url=None)  # served with local assets: docs_pages
    docs_pages.mount(app)
    app.state.hub = hub
    # Innermost first: the direct routes, then the error guard and the body limit, then
    # whatever is added later (each add_middleware wraps the ones before it).
    app.add_middleware(DirectRoutes, routes=lambda: app.routes)
    problems.install(app)
    # every body held to its route's limit, a 413 in its route's format
    app.add_middleware(BodySizeLimit, max_bytes=hub.settings.max_body_bytes,
                       routes=lambda: app.routes)
    app.add_middleware(RequestIds)  # outermost: every request, errors included, has its id
    app.state.lifespan_hooks = []  # doors with background work of their own add theirs
    for door in [*(doors.registered() if mounted is None else mounted), *hub.doors]:
        door.mount(app, hub)

    @app.get("/healthz", tags=["health"], summary="Liveness and database check",
             responses={500: PROBLEM_RESPONSES[500]})
    async def healthz() -> dict[str, object]:
        last_seq = await call(hub.events.last_seq)
        leading = hub.leadership is not None and hub.leadership.leading
        return {"status": "ok", "version": __version__, "last_seq": last_seq,
                "waiters": hub.bus.waiter_count,  # these two: of the process answering
                "pid": os.getpid(), "leader": leading}

    return app
