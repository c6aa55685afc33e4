"""The browser side of sign-in: the session cookie, the signed-in viewer, CSRF checks.

* The session cookie is HTTP-only, ``SameSite=Lax``, ``Secure`` when the public URL is
  https, and carries only a random token (the hub stores its hash).
* Every form carries the session's CSRF token; a POST whose token is missing or wrong is
  refused with 403 (:class:`CsrfRejected`), before anything else happens.
* Without a live session, :class:`SignInRequired` sends the browser to ``/login`` with
  ``next`` set to the page it was on, and sign-in returns it there; a live stream or a
  script gets it as the 401 problem (``page_route.PageRoute``).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from tickethub.api.deps import call, hub_of
from tickethub.domain.actors import Actor
from tickethub.errors import Forbidden, Unauthenticated
from tickethub.services.sessions import Session
from tickethub.web.live import SignedIn

COOKIE = "th_session"
LOGIN_COOKIE = "th_login_csrf"


class SignInRequired(Unauthenticated):
    """No live session; ``next_path`` is the page to come back to after signing in."""

    def __init__(self, next_path: str) -> None:
        super().__init__("you are not signed in, or your session ended; sign in again")
        self.next_path = next_path

    def headers(self) -> dict[str, str]:
        # The session is a cookie: there is no HTTP auth scheme to challenge with, and a
        # Bearer challenge would point a script at the API's tokens instead.
        return {}


class CsrfRejected(Forbidden):
    """A form without the session's CSRF token, or with a wrong one."""

    code = "csrf_rejected"
    title = "Form expired"

    def __init__(self) -> None:
        super().__init__("This form is missing its security token or the token is wrong. "
                         "Go back, reload the page and try again.", field="csrf")


@dataclass(frozen=True, slots=True)
class Viewer:
    """The signed-in person looking at a page."""

    session: Session

    @property
    def actor(self) -> Actor:
        return self.session.actor

    @property
    def name(self) -> str:
        return self.session.actor.name

    @property
    def csrf(self) -> str:
        return self.session.csrf

    @property
    def can_answer(self) -> bool:
        return self.session.actor.can_steer


def safe_next(target: str | None, default: str = "/") -> str:
    """Only local paths: ``/t/5`` yes, ``//evil.example`` or ``https://...`` no."""
    if not target:
        return default
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return default
    if "\\" in target:
        return default
    return target


def page_of(request: Request) -> str:
    """Where to come back to after signing in: this page, or for a form post the page
    that showed the form (``/t/5/answer`` → ``/t/5``)."""
    path = request.url.path
    if request.method != "GET":
        path = path.rsplit("/", 1)[0] or "/"
    elif request.url.query:
        path = f"{path}?{request.url.query}"
    return safe_next(path)


async def viewer(request: Request) -> Viewer:
    """The signed-in person (FastAPI dependency); redirects to sign-in when there is none."""
    hub = hub_of(request)
    session = await call(hub.sessions.resume, request.cookies.get(COOKIE))
    if session is None:
        raise SignInRequired(page_of(request))
    found = Viewer(session)
    request.state.viewer = found  # an error page shows who is signed in (page_route)
    return found


def still_signed_in(request: Request) -> SignedIn:
    """For a page's live stream: whether the session that opened it is still live."""
    hub = hub_of(request)
    token = request.cookies.get(COOKIE)

    async def check() -> bool:
        return bool(await call(hub.sessions.alive, token))

    return check


def check_csrf(viewer: Viewer, sent: object) -> None:
    if not isinstance(sent, str) or not viewer.session.csrf_ok(sent):
        raise CsrfRejected()


def is_secure(request: Request) -> bool:
    return bool(hub_of(request).public_url().startswith("https://"))


def set_cookie(request: Request, response: Response, name: str, value: str,
               max_age: int | None) -> None:
    response.set_cookie(name, value, max_age=max_age, path="/", httponly=True,
                        samesite="lax", secure=is_secure(request))


def clear_cookie(request: Request, response: Response, name: str) -> None:
    response.delete_cookie(name, path="/", httponly=True, samesite="lax",
                           secure=is_secure(request))
