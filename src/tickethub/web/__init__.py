"""The people's web inbox: server-rendered pages over the services, live over SSE.

``mount(app)`` adds the pages (``/`` inbox, ``/triage`` split-pane triage, ``/t/{id}``
ticket, ``/tree/{id}``, ``/login``, ``/logout``) and ``/static`` to the hub's FastAPI app.
Their errors are answered by their route class (``page_route.PageRoute``), not by the
app's exception handlers.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from tickethub.web import (
    auth_routes,
    inbox_routes,
    saved_view_routes,
    ticket_routes,
    tree_routes,
    triage_routes,
)
from tickethub.web.render import STATIC


def mount(app: FastAPI) -> None:
    for module in (auth_routes, inbox_routes, ticket_routes, tree_routes, triage_routes,
                   saved_view_routes):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
