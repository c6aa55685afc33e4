"""OpenAI's error shape, scoped to the ``/v1`` routes.

``{"error": {"message", "type", "param", "code"}}`` with the status OpenAI would use. This
module only says how a :class:`~tickethub.errors.Problem` looks on this door
(:func:`openai_json`); :class:`OpenAIRoute` names it as its ``wire``, and
``api/problems.py`` renders the errors of these routes with it (the rest of the hub
keeps ``application/problem+json``).
"""

from __future__ import annotations

from typing import Any

from fastapi.routing import APIRoute

from tickethub import json_codec
from tickethub.api.problems import problem_of
from tickethub.errors import Problem

_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
          404: "invalid_request_error", 409: "invalid_request_error",
          413: "invalid_request_error", 422: "invalid_request_error", 429: "rate_limit_error",
          502: "upstream_error", 504: "upstream_error"}


ERROR_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["error"],
    "properties": {"error": {
        "type": "object", "required": ["message", "type"],
        "properties": {"message": {"type": "string"}, "type": {"type": "string"},
                       "param": {"type": ["string", "null"]},
                       "code": {"type": ["string", "null"]}}}},
}
"""The body of :func:`openai_json`, for the OpenAPI document."""
STATUSES = (400, 401, 403, 404, 409, 413, 429, 500, 502, 504)
UPSTREAM = {502: "The upstream model failed", 504: "The upstream model did not answer in time"}


def openai_json(problem: Problem, instance: str | None) -> tuple[int, dict[str, Any], str]:
    """This door's wire format of a problem (:data:`ERROR_SCHEMA`). OpenAI answers a
    request that failed validation with 400 ``invalid_value``, never 422."""
    status, message, code, param = problem.status, problem.detail, problem.code, problem.field
    errors = problem.extra.get("errors")
    if status == 401:
        message = f"Incorrect API key provided: {message}"
    elif code == "validation_failed" and errors:
        status, code = 400, "invalid_value"
        param = errors[0]["field"]
        message = f"Invalid value for '{param}': {errors[0]['message']}"
    return status, {"error": {"message": message, "type": _TYPES.get(status, "api_error"),
                              "param": param, "code": code}}, "application/json"


def error_event(exc: Exception) -> bytes:
    """A server-sent event carrying ``exc`` in this door's shape (the SDK raises it)."""
    _, body, _ = openai_json(problem_of(exc), None)
    return b"data: " + json_codec.dumps_bytes(body) + b"\n\n"


class OpenAIRoute(APIRoute):
    """A route of this door: its errors are rendered in OpenAI's shape (``wire``, read
    by ``api/problems.py``)."""

    wire = staticmethod(openai_json)
