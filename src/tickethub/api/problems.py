"""The one place errors become HTTP: ``application/problem+json`` (RFC 9457) with a
stable ``code`` and, where one field is to blame, that ``field``."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from tickethub.errors import TickethubError

log = logging.getLogger(__name__)

PROBLEM = "application/problem+json"


def problem_response(problem: dict[str, Any], headers: dict[str, str] | None = None
                     ) -> JSONResponse:
    return JSONResponse(problem, status_code=problem["status"], media_type=PROBLEM,
                        headers=headers)


def _field_of(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    return ".".join(parts) or "body"


async def _tickethub_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, TickethubError)
    problem = exc.to_problem()
    problem["instance"] = request.url.path
    return problem_response(problem, exc.headers() or None)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    if any(e.get("type") == "json_invalid" for e in errors):
        first = next(e for e in errors if e.get("type") == "json_invalid")
        return problem_response({
            "type": "https://tickethub.dev/problems/malformed_json", "title": "Malformed JSON",
            "status": 400, "code": "malformed_json", "field": "body",
            "detail": f"the body is not valid JSON: {first.get('ctx', {}).get('error', '')}",
            "instance": request.url.path,
        })
    described = [{"field": _field_of(tuple(e["loc"])), "message": e["msg"]} for e in errors]
    first_error = described[0]
    return problem_response({
        "type": "https://tickethub.dev/problems/validation_failed", "title": "Validation failed",
        "status": 422, "code": "validation_failed", "field": first_error["field"],
        "detail": f"{first_error['field']}: {first_error['message']}", "errors": described,
        "instance": request.url.path,
    })


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    codes = {404: "not_found", 405: "method_not_allowed", 401: "unauthenticated",
             403: "forbidden", 413: "payload_too_large"}
    code = codes.get(exc.status_code, f"http_{exc.status_code}")
    return problem_response({
        "type": f"https://tickethub.dev/problems/{code}", "title": str(exc.detail),
        "status": exc.status_code, "code": code, "detail": str(exc.detail),
        "instance": request.url.path,
    }, headers=dict(exc.headers) if exc.headers else None)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem_response({
        "type": "https://tickethub.dev/problems/internal_error", "title": "Internal error",
        "status": 500, "code": "internal_error",
        "detail": "the hub hit an unexpected error; nothing was half-written",
        "instance": request.url.path,
    })


HANDLERS = {
    TickethubError: _tickethub_error,
    RequestValidationError: _validation_error,
    HTTPException: _http_error,
    Exception: _unexpected,
}


def install(app: FastAPI) -> None:
    for exc_class, handler in HANDLERS.items():
        app.add_exception_handler(exc_class, handler)
