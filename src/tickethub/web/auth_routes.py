"""``/login``, ``/logout`` and ``/session``.

``GET /session`` answers ``{"signed_in": true|false}`` (never a redirect), so an open page
whose live stream stopped can tell "session ended — sign in again" from a lost network.

The sign-in form is protected against login CSRF with a double-submit token: a random
value in an HTTP-only cookie that the form must echo back.

A login link (``tickethub user login-link NAME``) opens ``/login/link?token=...``, which
only shows a button: the token is spent by the POST, so mail scanners that fetch links
do not use it up.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from tickethub.api.deps import call, client_address, hub_of
from tickethub.errors import Throttled, Unauthenticated
from tickethub.services.sessions import Session
from tickethub.web.page_route import PageRoute
from tickethub.web.render import page
from tickethub.web.session import (
    COOKIE,
    LOGIN_COOKIE,
    CsrfRejected,
    Viewer,
    check_csrf,
    clear_cookie,
    safe_next,
    set_cookie,
    viewer,
)

router = APIRouter(include_in_schema=False, route_class=PageRoute)


def _login_page(request: Request, next_path: str, *, error: str | None = None,
                username: str = "", status_code: int = 200,
                headers: dict[str, str] | None = None) -> Response:
    token = request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(24)
    response = page(request, "login.html", {"next": next_path, "csrf": token,
                                            "error": error, "username": username,
                                            "viewer": None}, status_code)
    response.headers.update(headers or {})
    set_cookie(request, response, LOGIN_COOKIE, token, max_age=3600)
    return response


@router.get("/login")
async def login_form(request: Request, next: str | None = None) -> Response:
    hub = hub_of(request)
    target = safe_next(next)
    if await call(hub.sessions.resume, request.cookies.get(COOKIE)) is not None:
        return RedirectResponse(target, status_code=303)
    return _login_page(request, target)


def _check_login_csrf(request: Request, form: Any) -> None:
    sent, expected = str(form.get("csrf") or ""), request.cookies.get(LOGIN_COOKIE) or ""
    if not sent or not expected or not hmac.compare_digest(sent.encode(), expected.encode()):
        raise CsrfRejected()


def _signed_in(request: Request, session: Session, token: str, target: str) -> Response:
    response = RedirectResponse(target, status_code=303)
    max_age = int((session.expires_at - session.created_at).total_seconds())
    set_cookie(request, response, COOKIE, token, max_age=max_age)
    clear_cookie(request, response, LOGIN_COOKIE)
    return response


@router.get("/login/link")
async def link_form(request: Request, token: str = "", next: str | None = None) -> Response:
    csrf = request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(24)
    response = page(request, "login_link.html", {"token": token, "csrf": csrf,
                                                 "next": safe_next(next), "viewer": None})
    set_cookie(request, response, LOGIN_COOKIE, csrf, max_age=3600)
    return response


@router.post("/login/link")
async def link_sign_in(request: Request) -> Response:
    hub = hub_of(request)
    form = await request.form()
    _check_login_csrf(request, form)
    target = safe_next(str(form.get("next") or ""))
    try:
        session, token = await call(hub.sessions.sign_in_with_link,
                                    str(form.get("token") or ""), client_address(request.scope))
    except Unauthenticated as exc:
        return _login_page(request, target, error=f"{exc.detail}; sign in with your "
                           "password or ask for a new link.", status_code=401)
    except Throttled as exc:
        return _login_page(request, target, error=exc.detail, status_code=exc.status,
                           headers=exc.headers())
    return _signed_in(request, session, token, target)


@router.post("/login")
async def login(request: Request) -> Response:
    hub = hub_of(request)
    form = await request.form()
    _check_login_csrf(request, form)
    target = safe_next(str(form.get("next") or ""))
    username = str(form.get("username") or "").strip()
    try:
        session, token = await call(hub.sessions.sign_in, username,
                                    str(form.get("password") or ""),
                                    client_address(request.scope))
    except Unauthenticated as exc:
        return _login_page(request, target, error=exc.detail, username=username,
                           status_code=401)
    except Throttled as exc:
        return _login_page(request, target, error=exc.detail, username=username,
                           status_code=exc.status, headers=exc.headers())
    return _signed_in(request, session, token, target)


@router.post("/logout")
async def logout(request: Request, me: Annotated[Viewer, Depends(viewer)]) -> Response:
    form = await request.form()
    check_csrf(me, form.get("csrf"))
    await call(hub_of(request).sessions.sign_out, request.cookies.get(COOKIE))
    response = RedirectResponse("/login", status_code=303)
    clear_cookie(request, response, COOKIE)
    return response


@router.get("/session")
async def session_state(request: Request) -> Response:
    live = await call(hub_of(request).sessions.alive, request.cookies.get(COOKIE))
    return JSONResponse({"signed_in": bool(live)},
                        headers={"Cache-Control": "no-store"})
