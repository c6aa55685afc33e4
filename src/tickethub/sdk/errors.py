"""Errors the SDK raises: one tree, built from the hub's ``application/problem+json``.

Every error carries ``status`` (the HTTP status, ``0`` when no response came back),
``code`` (the hub's stable machine-readable code), ``field`` (the input at fault, or
``None``), ``detail`` (one human sentence) and ``problem`` (the whole problem document).
Catch :class:`HubError` for all of them, or a subclass for one kind.
"""

from __future__ import annotations

from typing import Any

import httpx


class HubError(Exception):
    """The hub refused a request, or could not be reached."""

    def __init__(self, status: int, code: str, detail: str, field: str | None = None,
                 problem: dict[str, Any] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.field = field
        self.problem = problem or {}

    def __str__(self) -> str:
        where = f", field {self.field}" if self.field else ""
        return f"{self.detail} ({self.code}{where})"

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(status={self.status}, code={self.code!r}, "
                f"field={self.field!r}, detail={self.detail!r})")


class BadRequestError(HubError):
    """400 or 413: the request itself was malformed or too large."""


class ValidationError(BadRequestError):
    """422: a value failed validation (``field`` names it)."""


class AuthenticationError(HubError):
    """401: no token, or a token the hub does not know (or revoked)."""


class PermissionDeniedError(HubError):
    """403: the token's role may not do this (e.g. an agent approving its own approval)."""


class NotFoundError(HubError):
    """404: no such ticket (or token, or webhook)."""


class ConflictError(HubError):
    """409: illegal status transition, stale version, reused idempotency key, cursor
    ahead of the event log. ``problem`` holds the details (``current``/``target``...)."""


class HubUnavailable(HubError):
    """The hub could not be reached (``status`` 0, ``code`` ``unreachable``) or answered
    502/503/504. Waits and event streams ride these out; other calls raise them."""


_BY_STATUS: dict[int, type[HubError]] = {
    400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError,
    404: NotFoundError, 409: ConflictError, 413: BadRequestError, 422: ValidationError,
    502: HubUnavailable, 503: HubUnavailable, 504: HubUnavailable,
}

#: Statuses after which a retry may succeed without changing the request.
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})


NO_TOKEN = "no token was given: set TICKETHUB_TOKEN or pass token="


def error_from_response(response: httpx.Response, *, has_token: bool = True) -> HubError:
    """The :class:`HubError` for a response with status >= 400 (body already read)."""
    problem: dict[str, Any] = {}
    try:
        parsed = response.json()
        if isinstance(parsed, dict):
            problem = parsed
    except ValueError:
        pass
    status = response.status_code
    code = str(problem.get("code") or f"http_{status}")
    detail = str(problem.get("detail") or problem.get("title")
                 or response.text.strip()[:200] or response.reason_phrase or "error")
    if status == 401 and not has_token:
        detail += f"; {NO_TOKEN}"
    field = problem.get("field")
    cls = _BY_STATUS.get(status, HubError)
    return cls(status, code, detail, str(field) if field is not None else None, problem)


def unreachable(exc: httpx.TransportError) -> HubUnavailable:
    """The error for a request that got no (complete) response."""
    try:
        url = exc.request.url
        where = f"{url.scheme}://{url.netloc.decode()}"
    except RuntimeError:  # the error was raised before a request existed
        where = "the configured URL"
    reason = str(exc) or type(exc).__name__
    return HubUnavailable(0, "unreachable", f"cannot reach the hub at {where}: {reason}")
