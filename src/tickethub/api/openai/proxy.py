"""The proxy to an upstream OpenAI-compatible endpoint, with an approval gate.

Requests for an upstream model are forwarded as they are. When the request offers a tool
the policy names (tool names or globs), the upstream is asked without streaming so the
whole answer can be inspected; tool calls the policy names open an approval ticket, and
the answer goes back only once a person approved (maybe with edited arguments, checked
against the tool's schema) or refused it. Everything else passes straight through,
streaming included. Upstream failures become 502/504 and are recorded on a ticket.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

from fastapi import Response
from fastapi.responses import JSONResponse

from tickethub.api.deps import call
from tickethub.api.openai.errors import error_event, openai_json
from tickethub.api.openai.schemas import ChatRequest, chunks_of, completion_id
from tickethub.api.openai.streaming import DONE, held, sse, sse_response
from tickethub.api.problems import render
from tickethub.domain.actors import Actor
from tickethub.domain.status import Status
from tickethub.errors import IllegalTransition, Problem
from tickethub.llm.errors import UpstreamError
from tickethub.llm.openai_compatible import OpenAICompatible, completion_of
from tickethub.llm.port import Completion, ToolCall
from tickethub.ops.series import parked
from tickethub.services.conversations_openai import OpenAIConversations, Refusal
from tickethub.services.doors import TicketsDoor
from tickethub.services.waiting import wait_resolved

JSON = "application/json"


class ToolPolicy:
    """Which tool calls need a person's approval: names or shell-style globs."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(p for p in patterns if p)

    def gates(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, p) for p in self.patterns)


class ProxyDoor:
    """Forwards chat-completions requests to the upstream, gating named tool calls."""

    def __init__(self, hub: TicketsDoor, upstream: OpenAICompatible) -> None:
        settings = hub.settings
        self._hub = hub
        self._upstream = upstream
        self._conversations = OpenAIConversations(hub.tickets)
        self._policy = ToolPolicy(settings.upstream_approval_tools)
        self._patterns = tuple(settings.upstream_models)
        self._on_reject = settings.upstream_on_reject

    def serves(self, model: str) -> bool:
        return any(fnmatch.fnmatchcase(model, p) for p in self._patterns)

    async def respond(self, actor: Actor, request: ChatRequest, body: dict[str, Any],
                      raw: bytes, timeout: float) -> Response:
        """Answer ``request`` (``body`` as parsed, ``raw`` as received)."""
        gated = any(self._policy.gates(t.function.name) for t in request.tools or ())
        try:
            if not gated:
                return await (self._stream(raw) if request.stream else self._forward(raw))
            return await self._gate(actor, request, body, timeout)
        except UpstreamError as exc:
            ticket = await call(self._conversations.record_upstream_failure, actor,
                                request.model, request.wire_messages(), exc.detail)
            url = self._hub.public_url(f"/api/v1/tickets/{ticket.id}")
            recorded = dataclasses.replace(
                exc.problem(), detail=f"{exc.detail} (recorded on ticket #{ticket.id}: {url})")
            return render(recorded, wire=openai_json,
                          headers={"X-Tickethub-Ticket": str(ticket.id)})

    # -- pass-through --------------------------------------------------------------------

    async def _forward(self, raw: bytes) -> Response:
        reply = await self._upstream.send(raw)
        return Response(reply.content, status_code=reply.status, media_type=JSON)

    async def _stream(self, raw: bytes) -> Response:
        """Relay the upstream's event stream byte for byte. The upstream is opened before
        the response starts, so an unreachable upstream is still a plain 502/504."""
        context = self._upstream.stream(raw)
        upstream = await context.__aenter__()
        if upstream.status >= 400:
            try:
                content = await upstream.read()
            finally:
                await context.__aexit__(None, None, None)
            return Response(content, status_code=upstream.status, media_type=JSON)

        async def relay() -> AsyncIterator[bytes]:
            try:
                async for piece in upstream.aiter_bytes():
                    yield piece
            except UpstreamError as exc:  # the upstream broke off mid-stream
                yield error_event(exc)
            finally:
                await context.__aexit__(*sys.exc_info())

        return sse_response(relay())

    # -- the approval gate ---------------------------------------------------------------

    async def _gate(self, actor: Actor, request: ChatRequest, body: dict[str, Any],
                    timeout: float) -> Response:
        plain = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
        reply = await self._upstream.create(plain)
        if reply.status >= 400:
            return Response(reply.content, status_code=reply.status, media_type=JSON)
        upstream_body = reply.body
        completion = completion_of(upstream_body)
        if not any(self._policy.gates(c.name) for c in completion.tool_calls):
            return self._send(request, upstream_body, completion)
        ticket = await call(self._conversations.open_tool_approval, actor, request.model,
                            request.wire_messages(), completion.tool_calls,
                            request.wire_tools())
        headers = {"X-Tickethub-Ticket": str(ticket.id)}

        async def decide() -> tuple[dict[str, Any], Completion] | Refusal:
            with parked("openai_block"):
                decided = await wait_resolved(self._hub.tickets.get, self._hub.bus,
                                              ticket.id, timeout)
            outcome = self._conversations.approved_calls(decided)
            if outcome is None:  # nobody decided in time: fail closed, close the ticket
                try:
                    await call(self._hub.tickets.transition, actor, ticket.id,
                               Status.CANCELLED, "openai",
                               reason=f"no decision within {timeout:g} s")
                    return Refusal(f"no person decided within {timeout:g} s", "timeout")
                except IllegalTransition:  # decided in the very last moment: use that
                    decided = await call(self._hub.tickets.get, ticket.id)
                    outcome = self._conversations.approved_calls(decided)
                    if outcome is None:
                        raise
            if isinstance(outcome, Refusal):
                return outcome
            return self._approved(upstream_body, completion, outcome)

        if request.stream:
            cid = str(upstream_body.get("id") or completion_id())

            def emit(result: tuple[dict[str, Any], Completion] | Refusal) -> list[dict[str, Any]]:
                if isinstance(result, Refusal):
                    if self._on_reject == "error":
                        return [openai_json(self._refusal(result), None)[1]]
                    result = self._refused(upstream_body, completion, result)
                return chunks_of(cid, request.model, result[1],
                                 include_usage=request.include_usage)

            return sse_response(held(decide(), self._hub.settings.openai_keepalive_seconds,
                                     emit), headers)
        result = await decide()
        if isinstance(result, Refusal):
            if self._on_reject == "error":
                return render(self._refusal(result), wire=openai_json, headers=headers)
            result = self._refused(upstream_body, completion, result)
        return JSONResponse(result[0], headers=headers)

    def _send(self, request: ChatRequest, body: dict[str, Any], completion: Completion
              ) -> Response:
        if not request.stream:
            return JSONResponse(body)
        cid = str(body.get("id") or completion_id())
        chunks = chunks_of(cid, request.model, completion, include_usage=request.include_usage)

        async def replay() -> AsyncIterator[bytes]:
            for chunk in chunks:
                yield sse(chunk)
            yield DONE

        return sse_response(replay())

    @staticmethod
    def _approved(body: dict[str, Any], completion: Completion, calls: Sequence[ToolCall]
                  ) -> tuple[dict[str, Any], Completion]:
        approved = Completion(completion.content, tuple(calls), "tool_calls", completion.usage,
                              completion.model)
        body = {**body, "choices": [{**body["choices"][0], "message": approved.to_message(),
                                     "finish_reason": "tool_calls"}]}
        return body, approved

    @staticmethod
    def _refused(body: dict[str, Any], completion: Completion, refusal: Refusal
                 ) -> tuple[dict[str, Any], Completion]:
        names = ", ".join(dict.fromkeys(c.name for c in completion.tool_calls))
        text = f"A person refused the tool call ({names}): {refusal.reason}"
        refused = Completion(text, (), "stop", completion.usage, completion.model)
        body = {**body, "choices": [{**body["choices"][0], "message": refused.to_message(),
                                     "finish_reason": "stop"}],
                "tickethub": {"outcome": refusal.outcome, "reason": refusal.reason}}
        return body, refused

    @staticmethod
    def _refusal(refusal: Refusal) -> Problem:
        return Problem(403, "tool_call_rejected", "Tool call rejected",
                       f"A person refused the tool call: {refusal.reason}")
