"""The people's web inbox: server-rendered pages over the services, live over SSE.

``mount(app)`` adds the pages (``/`` inbox, ``/triage`` split-pane triage, ``/t/{id}``
ticket, ``/tree/{id}``, ``/login``, ``/logout``) and ``/static`` to the hub's FastAPI app.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from tickethub.web import (
    auth_routes,
    inbox_routes,
    saved_view_routes,
    ticket_routes,
    tree_routes,
    triage_routes,
)
from tickethub.web.render import STATIC, page
from tickethub.web.session import CsrfRejected, SignInRequired
from tickethub.web.ticket_view import NoSuchTicket


async def _sign_in(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SignInRequired)
    if request.url.path.endswith("/stream"):
        return PlainTextResponse("sign in again", status_code=401)
    return RedirectResponse(f"/login?next={quote(exc.next_path, safe='/')}", status_code=303)


async def _csrf(request: Request, exc: Exception) -> Response:
    return page(request, "error.html", {
        "viewer": None, "title": "Form expired",
        "message": "This form is missing its security token or the token is wrong. "
                   "Go back, reload the page and try again.",
    }, 403)


async def _no_such_ticket(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, NoSuchTicket)
    return page(request, "error.html", {"viewer": None, "title": "Not found",
                                        "message": exc.detail}, 404)


def mount(app: FastAPI) -> None:
    for module in (auth_routes, inbox_routes, ticket_routes, tree_routes, triage_routes,
                   saved_view_routes):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_exception_handler(SignInRequired, _sign_in)
    app.add_exception_handler(CsrfRejected, _csrf)
    app.add_exception_handler(NoSuchTicket, _no_such_ticket)
