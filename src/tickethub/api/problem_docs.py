"""How the doors' errors are described in the OpenAPI document: each status with its
meaning and the door's error schema."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

PROBLEM = "application/problem+json"


class ProblemDocument(BaseModel):
    """An error as every door but ``/ap/v1`` and ``/v1`` sends it (RFC 9457), for the
    OpenAPI document. Some codes add members (``stale_version``: ``expected``/``actual``)."""

    model_config = ConfigDict(extra="allow", title="Problem")

    type: str
    title: str
    status: int
    detail: str
    code: str = Field(description="Stable and machine-readable, e.g. 'not_found'.")
    field: str | None = Field(None, description="The field or parameter at fault.")
    instance: str | None = None
    errors: list[dict[str, str]] | None = Field(None, description="validation_failed: "
                                                "each field and what is wrong with it.")


_MEANING = {
    400: "Bad request, or a body that is not JSON (`malformed_json`)",
    401: "No valid token (`WWW-Authenticate: Bearer`)",
    403: "The token's role may not do this",
    404: "No such resource",
    409: "Conflict: a stale `version`, an illegal status change, an event cursor ahead of "
         "the log, a reused idempotency key",
    413: "The body is larger than `max_body_bytes`",
    422: "A field or parameter is invalid; `field` names it",
    429: "Too many failed credentials from this client or for this account; `Retry-After` "
         "says when to try again",
    500: "The hub hit an unexpected error",
    503: "A channel this needs is off, or the database is unavailable for a moment "
         "(`database_unavailable`; `Retry-After` says when to retry)",
}


def error_responses(schema: dict[str, Any], media_type: str = "application/json",
                    statuses: tuple[int, ...] = tuple(_MEANING),
                    meaning: dict[int, str] | None = None) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of a door's errors: each status with the door's error
    ``schema`` under ``media_type``. Given to a router (``APIRouter(responses=...)``), so
    every route of the door documents what it really returns."""
    meanings = {**_MEANING, **(meaning or {})}
    return {status: {"description": meanings[status],
                     "content": {media_type: {"schema": schema}}} for status in statuses}


PROBLEM_RESPONSES = error_responses(ProblemDocument.model_json_schema(), PROBLEM)
"""The errors of the hub's own routes (``/api/v1``, ``/hooks``, ``/healthz``)."""
