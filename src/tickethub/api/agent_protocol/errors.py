"""Errors on the Agent Protocol routes, in the shape that protocol's clients expect.

The spec's 404 is ``{"message": ...}`` and its 422 is "a generic JSON object", so every
error on ``/ap/v1`` is ``application/json`` with a ``message``, plus the hub's stable
``code`` and the ``field`` at fault. Invalid and malformed bodies are 422, as the spec
wants. This module only says how a :class:`~tickethub.errors.Problem` looks on this door
(:func:`agent_protocol_json`); the door's route class names it as its ``wire`` and
``api/problems.py`` renders every error with it, so it applies to these routes only; the
rest of the hub keeps its ``application/problem+json``.

The route class also names this door's body limits (``body_limit``, which the app-wide
``api/limits.BodySizeLimit`` holds every request to): the hub's ``max_body_bytes`` for
JSON bodies, and ``ap_max_artifact_bytes`` plus room for the multipart envelope for
uploads.
"""

from __future__ import annotations

from typing import Any

from fastapi.routing import APIRoute
from starlette.types import Scope

from tickethub.errors import Problem

UPLOAD_OPERATION = "uploadAgentTaskArtifacts"
MULTIPART_SLACK = 64 * 1024


ERROR_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["message", "code"], "additionalProperties": True,
    "properties": {"message": {"type": "string"}, "code": {"type": "string"},
                   "field": {"type": "string"}, "errors": {"type": "array"}},
}
"""The body of :func:`agent_protocol_json`, for the OpenAPI document."""


def agent_protocol_json(problem: Problem, instance: str | None
                        ) -> tuple[int, dict[str, Any], str]:
    """This door's wire format of a problem (:data:`ERROR_SCHEMA`); a body that is not
    JSON is 422 here, as the spec wants."""
    body: dict[str, Any] = {"message": problem.detail, "code": problem.code}
    if problem.field is not None:
        body["field"] = problem.field
    body.update(problem.extra)
    status = 422 if problem.code == "malformed_json" else problem.status
    return status, body, "application/json"


class AgentProtocolRoute(APIRoute):
    """An ``APIRoute`` of this door: its errors are rendered in the Agent Protocol's
    shape (``wire``, read by ``api/problems.py``) and its body is held to the door's
    limit (``body_limit``, read by ``api/limits.BodySizeLimit``)."""

    wire = staticmethod(agent_protocol_json)

    def body_limit(self, scope: Scope) -> int:
        """The largest body this route takes (``scope``: the request's)."""
        settings = scope["app"].state.hub.settings
        if self.operation_id == UPLOAD_OPERATION:
            return int(settings.ap_max_artifact_bytes) + MULTIPART_SLACK
        return int(settings.max_body_bytes)
