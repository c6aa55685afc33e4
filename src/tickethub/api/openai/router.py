"""``/v1``: OpenAI's ``POST /chat/completions`` and ``GET /models``, errors in OpenAI's
shape. The API key is a hub token."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import ValidationError
from starlette.convertors import PathConvertor, register_url_convertor

from tickethub.api.deps import actor_for, bearer_token, client_address
from tickethub.api.openai.errors import ERROR_SCHEMA, STATUSES, UPSTREAM, OpenAIRoute
from tickethub.api.openai.gateway import Gateway, caller, gateway
from tickethub.api.openai.human import HUMAN, is_human
from tickethub.api.openai.schemas import ChatRequest
from tickethub.api.problem_docs import error_responses
from tickethub.api.problems import allowed_methods
from tickethub.domain.actors import Actor
from tickethub.errors import BadRequest, MalformedJSON, MethodNotAllowed, NotFound

router = APIRouter(prefix="/v1", tags=["openai"], route_class=OpenAIRoute,
                   responses=error_responses(ERROR_SCHEMA, statuses=STATUSES,
                                             meaning=UPSTREAM))

Me = Annotated[Actor, Depends(caller)]
Gate = Annotated[Gateway, Depends(gateway)]

MODE_HEADER = "x-tickethub-mode"
TIMEOUT_HEADER = "x-tickethub-timeout"
CONVERSATION_HEADER = "x-tickethub-conversation"


async def _body(request: Request) -> tuple[bytes, dict[str, Any], ChatRequest]:
    raw = await request.body()
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise MalformedJSON(f"We could not parse the JSON body of your request: {exc}",
                            field="body") from None
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object", field="body")
    try:
        return raw, body, ChatRequest.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(p) for p in first["loc"]) or "body"
        raise InvalidValue(f"Invalid value for '{param}': {first['msg']}",
                           field=param) from None


def _timeout(request: Request, default: float) -> float:
    raw = request.headers.get(TIMEOUT_HEADER)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1
    if not 0 < value <= default:
        raise BadRequest(f"{TIMEOUT_HEADER} must be seconds between 0 and {default:g}",
                         field="X-Tickethub-Timeout")
    return value


@router.post("/chat/completions", summary="Create a chat completion (OpenAI-compatible)")
async def chat_completions(request: Request) -> Response:
    """Model ``human`` or ``human:<label>`` asks a person through a ticket (headers
    ``X-Tickethub-Mode: block|handoff``, ``X-Tickethub-Timeout``,
    ``X-Tickethub-Conversation``); any other model goes to the configured upstream.
    Authenticate with ``Authorization: Bearer <hub token>``."""
    # No FastAPI dependencies on the proxy's hot path: resolving them costs more than
    # the whole rest of a pass-through.
    gate = gateway(request)
    me = await actor_for(gate.hub, bearer_token(request),
                           client_address(request.scope))
    raw, body, chat = await _body(request)
    settings = gate.hub.settings
    if is_human(chat.model):
        mode = request.headers.get(MODE_HEADER, settings.openai_default_mode).strip().lower()
        if mode not in ("block", "handoff"):
            raise BadRequest("X-Tickethub-Mode must be block or handoff",
                             field="X-Tickethub-Mode")
        conversation = (request.headers.get(CONVERSATION_HEADER)
                        or (chat.metadata or {}).get("conversation_id"))
        return await gate.human.respond(
            me, chat, mode=mode, timeout=_timeout(request, settings.openai_block_seconds),
            conversation_id=conversation,
        )
    if gate.proxy is None or not gate.proxy.serves(chat.model):
        raise _unknown_model(chat.model)
    return await gate.proxy.respond(
        me, chat, body, raw, _timeout(request, settings.upstream_approval_seconds))


class InvalidValue(BadRequest):
    """A field of the request is wrong (OpenAI answers 400, not 422)."""

    code = "invalid_value"


class ModelNotFound(NotFound):
    code = "model_not_found"


def _unknown_model(model: str) -> ModelNotFound:
    return ModelNotFound(f"The model '{model}' does not exist or you do not have access "
                         "to it.", field="model")


class _RestOfPath(PathConvertor):
    """Starlette's ``path``, newlines included: its ``.*`` stops at a decoded ``%0A``,
    so such a request matched no route of this door and was answered in the hub's
    problem+json instead of OpenAI's error shape (found by schemathesis)."""

    regex = r"[\s\S]*"


register_url_convertor("rest", _RestOfPath())


@router.get("/models", summary="List models (OpenAI-compatible)")
async def list_models(me: Me, gate: Gate) -> dict[str, Any]:
    """``human`` plus the upstream's models the hub forwards to."""
    models = [{"id": HUMAN, "object": "model", "created": 0, "owned_by": "tickethub"}]
    if gate.upstream is not None and gate.proxy is not None:
        models += [m for m in await gate.upstream.models()
                   if gate.proxy.serves(str(m.get("id", "")))]
    return {"object": "list", "data": models}


@router.get("/models/{model_id:rest}", summary="Retrieve a model (OpenAI-compatible)")
async def get_model(model_id: str, me: Me, gate: Gate) -> dict[str, Any]:
    if is_human(model_id):
        return {"id": model_id, "object": "model", "created": 0, "owned_by": "tickethub"}
    if gate.upstream is not None and gate.proxy is not None and gate.proxy.serves(model_id):
        for model in await gate.upstream.models():
            if model.get("id") == model_id:
                return model
    raise _unknown_model(model_id)


@router.api_route("/{path:rest}",
                  methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
                  include_in_schema=False)
async def not_here(path: str, request: Request) -> Response:
    """Any other URL under ``/v1`` (404), or a known one with another method (405)."""
    allowed = allowed_methods(request, [r for r in router.routes
                                        if getattr(r, "endpoint", None) is not not_here])
    if allowed:
        raise MethodNotAllowed("Method Not Allowed", allow=allowed)
    raise NotFound(f"Unknown request URL: /v1/{path}. The hub serves /v1/chat/completions "
                   "and /v1/models.", field="url")


