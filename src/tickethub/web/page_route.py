"""The route class of every web inbox page, and the web door's one error renderer.

Every error of a page's route (a service's refusal, an unknown ticket, a stale CSRF
token, a request that failed validation, an outage, a bug) becomes the hub's one
:class:`~tickethub.errors.Problem` (``api/problems.problem_of``), and
:func:`render_problem` only renders it in the web's two wire formats: the inbox's error
page (the problem's status, title, detail and headers) for a client that asked for HTML
(a navigation, a form post, the triage pane's ``fetch``), and the native API's
``application/problem+json`` (``api/problems.render``) for any other (the triage
actions' ``fetch``, which asks for JSON, a live stream's ``EventSource``, a script).

The one exception is signing in: without a live session a page is a redirect to
``/login`` and back, not an error; only a client that cannot follow it to a page (a live
stream, a script that asked for JSON) gets the 401 problem.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import quote

from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from tickethub.api import problems
from tickethub.errors import DatabaseUnavailable, Problem, TickethubError
from tickethub.web.render import SECURITY_HEADERS, page
from tickethub.web.session import SignInRequired

log = logging.getLogger(__name__)

# What a person can do about an error the hub had, which its detail does not say.
_RETRY = "Reload the page in a moment; a form you sent may need sending again."


def wants_json(request: Request) -> bool:
    """Whether a script asked for JSON (``Accept: application/json``)."""
    return "application/json" in request.headers.get("accept", "")


def wants_page(request: Request) -> bool:
    """Whether the request came from a browser that shows what it gets (a navigation or
    a form post), judged by its ``Accept`` header; asking for JSON too means a script."""
    return "text/html" in request.headers.get("accept", "") and not wants_json(request)


def render_problem(request: Request, problem: Problem) -> Response:
    """``problem`` in the web's wire format for ``request``: the error page to a client
    that asked for HTML, ``application/problem+json`` to any other; with the problem's
    status and headers, and the pages' security headers, either way."""
    if not wants_page(request):
        return problems.render(problem, request.scope, headers=SECURITY_HEADERS)
    detail = problem.detail[:1].upper() + problem.detail[1:]
    response = page(request, "error.html", {
        "viewer": getattr(request.state, "viewer", None), "title": problem.title,
        "message": detail, "hint": _RETRY if problem.status >= 500 else None,
    }, problem.status)
    response.headers.update(problem.headers)
    return response


def _sign_in(request: Request, exc: SignInRequired) -> Response:
    # An EventSource or a fetch() cannot show the sign-in page it would be sent to.
    if request.url.path.endswith("/stream") or wants_json(request):
        return render_problem(request, exc.problem())
    return RedirectResponse(f"/login?next={quote(exc.next_path, safe='/')}", status_code=303)


def _log(request: Request, exc: Exception) -> None:
    """A user's error is not logged; an outage is one line; anything else a traceback."""
    if isinstance(exc, DatabaseUnavailable):
        problems.log_outage(exc, request.scope)
    elif not isinstance(exc, TickethubError | RequestValidationError | HTTPException):
        log.exception("unhandled error on %s %s", request.method, request.url.path)


class PageRoute(APIRoute):
    """An ``APIRoute`` of the web inbox: whatever its handler or dependencies raise is
    answered here (:func:`render_problem`), not by the app's exception handlers."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handler(request: Request) -> Response:
            try:
                return await handle(request)
            except SignInRequired as exc:
                return _sign_in(request, exc)
            except Exception as exc:
                _log(request, exc)
                return render_problem(request, problems.problem_of(exc))

        return handler
