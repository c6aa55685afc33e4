"""The one exception tree of tickethub.

Every error a user can cause is a :class:`TickethubError` subclass carrying an HTTP
``status``, a stable machine-readable ``code`` and, where one field is to blame, that
``field``. Each becomes one :class:`Problem` value, which the API renders in the wire
format of the door it came through, in one place (``api/problems.py``:
``application/problem+json`` on the native API, the Agent Protocol's and OpenAI's shapes
on theirs); the CLI turns errors into one line and an exit code (``cli/output.py``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

PROBLEM_TYPE = "https://tickethub.dev/problems/"


@dataclasses.dataclass(frozen=True)
class Problem:
    """An error as a value: what went wrong, independent of any wire format.

    ``status`` is the HTTP status, ``code`` stable and machine-readable, ``field`` the
    field or parameter at fault (if one is), ``extra`` the members some codes add
    (``stale_version``: ``expected``/``actual``; ``validation_failed``: ``errors``), and
    ``headers`` the HTTP headers that go with it whatever the body's shape
    (``WWW-Authenticate``, ``Retry-After``). Doors only render it."""

    status: int
    code: str
    title: str
    detail: str
    field: str | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    headers: dict[str, str] = dataclasses.field(default_factory=dict)

    def document(self, instance: str | None = None) -> dict[str, Any]:
        """The RFC 9457 problem document (``instance``: the request path, if known)."""
        doc: dict[str, Any] = {"type": PROBLEM_TYPE + self.code, "title": self.title,
                               "status": self.status, "detail": self.detail,
                               "code": self.code}
        if self.field is not None:
            doc["field"] = self.field
        doc.update(self.extra)
        if instance is not None:
            doc["instance"] = instance
        return doc


class TickethubError(Exception):
    """Base class: a user-facing error with a status, a stable code and a message."""

    status: ClassVar[int] = 400
    code: ClassVar[str] = "bad_request"
    title: ClassVar[str] = "Bad request"

    def __init__(self, detail: str, *, field: str | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field
        self.extra = extra

    def problem(self) -> Problem:
        """This error as a :class:`Problem`."""
        return Problem(self.status, self.code, self.title, self.detail, self.field,
                       dict(self.extra), self.headers())

    def to_problem(self) -> dict[str, Any]:
        """The RFC 9457 problem document for this error (without ``instance``)."""
        return self.problem().document()

    def headers(self) -> dict[str, str]:
        """HTTP headers that go with this error, whatever shape each door gives the body."""
        return {"WWW-Authenticate": "Bearer"} if self.status == 401 else {}


class BadRequest(TickethubError):
    status = 400
    code = "bad_request"
    title = "Bad request"


class MalformedJSON(TickethubError):
    status = 400
    code = "malformed_json"
    title = "Malformed JSON"


class Unauthenticated(TickethubError):
    status = 401
    code = "unauthenticated"
    title = "Authentication required"


class Forbidden(TickethubError):
    status = 403
    code = "forbidden"
    title = "Forbidden"


class NotFound(TickethubError):
    status = 404
    code = "not_found"
    title = "Not found"


class Conflict(TickethubError):
    status = 409
    code = "conflict"
    title = "Conflict"


class IllegalTransition(Conflict):
    code = "illegal_transition"
    title = "Illegal status transition"

    def __init__(self, current: str, target: str, detail: str | None = None) -> None:
        super().__init__(
            detail or f"a ticket cannot go from {current!r} to {target!r}",
            field="status",
            current=current,
            target=target,
        )
        self.current = current
        self.target = target


class StaleVersion(Conflict):
    code = "stale_version"
    title = "Stale version"

    def __init__(self, expected: int, actual: int) -> None:
        super().__init__(
            f"the ticket is at version {actual}, not {expected}; reload it and retry",
            field="version",
            expected=expected,
            actual=actual,
        )


class IdempotencyKeyReused(Conflict):
    code = "idempotency_key_reused"
    title = "Idempotency key reused with a different request"


class CursorAhead(Conflict):
    code = "cursor_ahead"
    title = "Event cursor is ahead of the log"


class PayloadTooLarge(TickethubError):
    status = 413
    code = "payload_too_large"
    title = "Payload too large"


class ValidationFailed(TickethubError):
    status = 422
    code = "validation_failed"
    title = "Validation failed"

    def __init__(
        self, detail: str, *, field: str | None = None, errors: list[dict[str, Any]] | None = None
    ) -> None:
        extra: dict[str, Any] = {}
        if errors:
            extra["errors"] = errors
        super().__init__(detail, field=field, **extra)


class Throttled(TickethubError):
    """Too many failed attempts (sign-ins, links, tokens): wait ``retry_after`` seconds
    (sent as the ``Retry-After`` header too)."""

    status = 429
    code = "too_many_attempts"
    title = "Too many attempts"

    def __init__(self, detail: str, *, field: str | None = None, retry_after: int) -> None:
        super().__init__(detail, field=field, retry_after=retry_after)
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class MethodNotAllowed(TickethubError):
    """The path exists, not with this method; ``allow`` lists the methods it serves."""

    status = 405
    code = "method_not_allowed"
    title = "Method Not Allowed"

    def __init__(self, detail: str, *, allow: list[str]) -> None:
        super().__init__(detail)
        self.allow = allow

    def headers(self) -> dict[str, str]:
        return {"Allow": ", ".join(self.allow)}


class Unavailable(TickethubError):
    status = 503
    code = "unavailable"
    title = "Service unavailable"


DATABASE_RETRY_AFTER_SECONDS = 2


class DatabaseUnavailable(Exception):
    """The database cannot be reached (down, restarting, the connection dropped) or stayed
    locked past its busy timeout: nothing the caller did wrong; retry in a moment.

    Raised by the store's engine (``store/engine.py``) in place of the driver's error
    (chained to it). Deliberately *not* a :class:`TickethubError`: code that turns a
    user's error into an outcome (a refused item of a batch, a bounced mail, a skipped
    webhook) must not do so for an outage, so it goes on up like any failure and the
    door renders it as the 503 :meth:`problem`, with ``Retry-After``."""

    retry_after = DATABASE_RETRY_AFTER_SECONDS

    def problem(self) -> Problem:
        return Problem(503, "database_unavailable", "Database unavailable",
                       "the hub cannot reach its database right now; retry in a moment "
                       "(with the same Idempotency-Key an ask is not stored twice)",
                       headers={"Retry-After": str(self.retry_after)})


class WouldBlock(Exception):
    """A write that must not wait (the event loop's own, ``SqlStore.write_now``) could not
    start at once: another thread or process holds the database's write lock. Nothing was
    written; the caller writes the ordinary, waiting way (``group_commit``)."""
