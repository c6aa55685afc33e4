"""The route class of every web inbox page: a browser gets its errors as a page.

The hub's one error mapping (``api/problems.py``) answers every door in its wire format;
for a person's browser that would be a raw ``application/problem+json`` document on the
screen. So a request that asked for HTML (``Accept: text/html``, i.e. a navigation or a
form post, not a script's ``fetch`` or an ``EventSource``) and hit an outage or a bug gets
the inbox's error page instead, with the same status and ``Retry-After``. Errors the web
app maps itself (sign-in, CSRF, unknown ticket) and those of scripts still go to their
handlers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from tickethub.errors import DatabaseUnavailable, TickethubError
from tickethub.web.render import page

log = logging.getLogger(__name__)

_OUTAGE = ("The hub cannot reach its database right now. Nothing you sent was lost half-way: "
           "wait a moment and reload the page (a form you sent may need sending again).")
_BUG = "The hub hit an unexpected error; nothing was half-written. Reload the page to try again."


def wants_page(request: Request) -> bool:
    """Whether the request came from a browser that shows what it gets (a navigation or
    a form post), judged by its ``Accept`` header."""
    return "text/html" in request.headers.get("accept", "")


def _mapped(request: Request, exc: Exception) -> bool:
    """Whether the app has a handler of its own for ``exc`` (sign-in, CSRF, a service's
    refusal, Starlette's 404/405)."""
    if isinstance(exc, TickethubError | HTTPException):
        return True
    return any(isinstance(exc, cls) for cls in request.app.exception_handlers
               if isinstance(cls, type) and cls not in (Exception, DatabaseUnavailable))


class PageRoute(APIRoute):
    """An ``APIRoute`` of the web inbox whose outages (503 with ``Retry-After``) and
    unexpected errors (500) are shown to a browser as the error page."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handler(request: Request) -> Response:
            try:
                return await handle(request)
            except Exception as exc:
                if not wants_page(request) or _mapped(request, exc):
                    raise
                if isinstance(exc, DatabaseUnavailable):
                    log.warning("database unavailable on %s %s: %s", request.method,
                                request.url.path, exc)
                    response = page(request, "error.html", {
                        "viewer": None, "title": "Try again in a moment",
                        "message": _OUTAGE}, 503)
                    response.headers["Retry-After"] = str(exc.retry_after)
                    return response
                log.exception("unhandled error on %s %s", request.method, request.url.path)
                return page(request, "error.html", {
                    "viewer": None, "title": "Something went wrong", "message": _BUG}, 500)

        return handler
