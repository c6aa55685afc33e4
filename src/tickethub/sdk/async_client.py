"""``AsyncHub``: the asyncio client, method for method the same as
:class:`~tickethub.sdk.client.Hub` (same calls, same flows, same errors), with ``await``
and ``async for``."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import httpx

from tickethub.sdk import flows
from tickethub.sdk.calls import When
from tickethub.sdk.config import DEFAULT_POLL_SECONDS, HubConfig
from tickethub.sdk.errors import HubError
from tickethub.sdk.flows import Backoff, Emit, Flow, Open, ReadLine, Send, Sleep
from tickethub.sdk.models import Event, Message, Ticket, TokenInfo, TreeNode

T = TypeVar("T")


@dataclass(frozen=True)
class _Done:
    value: Any


class AsyncHub(HubConfig):
    """A connection to a tickethub for asyncio code.

    >>> async with AsyncHub() as hub:
    ...     ticket = await hub.ask("Which region?")
    ...     ticket = await ticket.wait()
    ...     print(ticket.answer.text)

    See :class:`~tickethub.sdk.client.Hub` for what each method does.
    """

    def __init__(self, url: str | None = None, token: str | None = None,
                 timeout: float = 30.0, *, via: str | None = None,
                 headers: Mapping[str, str] | None = None,
                 poll_seconds: float = DEFAULT_POLL_SECONDS, backoff: Backoff | None = None,
                 on_retry: Callable[[HubError, float], None] | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        super().__init__(url, token, timeout, via=via, headers=headers,
                         poll_seconds=poll_seconds, backoff=backoff, on_retry=on_retry)
        self._client = httpx.AsyncClient(base_url=self.url, headers=self.headers,
                                         timeout=timeout, transport=transport)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> AsyncHub:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the driver (see Hub._loop) ------------------------------------------------------

    async def _loop(self, flow: Flow[Any], result: bool) -> AsyncIterator[Any]:
        value: Any = None
        error: BaseException | None = None
        stream: httpx.Response | None = None
        lines: AsyncIterator[str] | None = None
        try:
            while True:
                try:
                    op = flow.throw(error) if error is not None else flow.send(value)
                except StopIteration as stop:
                    if result:
                        yield _Done(stop.value)
                    return
                value = error = None
                try:
                    if isinstance(op, Emit):
                        yield op.item
                    elif isinstance(op, Send):
                        value = await self._client.send(op.call.build(self._client))
                    elif isinstance(op, Open):
                        if stream is not None:
                            await stream.aclose()
                        stream = value = await self._client.send(
                            op.call.build(self._client), stream=True)
                        if stream.status_code >= 400:
                            await stream.aread()
                        lines = stream.aiter_lines()
                    elif isinstance(op, ReadLine):
                        assert lines is not None
                        value = await anext(lines, None)
                    elif isinstance(op, Sleep):
                        if op.error is not None and self.on_retry is not None:
                            self.on_retry(op.error, op.seconds)
                        await asyncio.sleep(op.seconds)
                except httpx.TransportError as exc:
                    error = exc
        finally:
            flow.close()
            if stream is not None:
                await stream.aclose()

    async def _run(self, flow: Flow[T]) -> T:
        loop = self._loop(flow, result=True)
        try:
            return cast(T, (await anext(loop)).value)
        finally:
            await loop.aclose()  # type: ignore[attr-defined]

    # -- tickets -------------------------------------------------------------------------

    async def ask(self, title: str, body: str = "", kind: str = "question",
                  labels: Iterable[str] = (), parent_id: int | None = None,
                  assignee: str | None = None, due_at: When | None = None,
                  response_schema: dict[str, Any] | None = None, proposal: Any = None,
                  refs: dict[str, Any] | None = None, idempotency_key: str | None = None
                  ) -> Ticket:
        return await self._run(flows.request(self._api.ask(
            title, body, kind, labels, parent_id, assignee, due_at, response_schema,
            proposal, refs, idempotency_key)))

    async def ask_and_wait(self, title: str, body: str = "", kind: str = "question", *,
                           timeout: float | None = None, **fields: Any) -> Ticket:
        call = self._api.ask(title, body, kind, **fields)
        return await self._run(flows.ask_and_wait(self._api, call, timeout,
                                                  self.poll_seconds, self.backoff))

    async def get(self, ticket_id: int) -> Ticket:
        return await self._run(flows.request(self._api.get(ticket_id)))

    def list(self, status: str | Iterable[str] | None = None, kind: str | None = None,
             label: str | None = None, assignee: str | None = None,
             parent_id: int | None = None, created_by: str | None = None,
             q: str | None = None, ref: str | None = None, limit: int = 50
             ) -> AsyncIterator[Ticket]:
        """``async for ticket in hub.list(...)``."""
        filters = {"status": status, "kind": kind, "label": label, "assignee": assignee,
                   "parent_id": parent_id, "created_by": created_by, "q": q, "ref": ref}
        return self._loop(flows.tickets(self._api, filters, limit), result=False)

    async def tree(self, ticket_id: int, depth: int = 3) -> TreeNode:
        return await self._run(flows.request(self._api.tree(ticket_id, depth)))

    async def messages(self, ticket_id: int) -> builtins.list[Message]:
        return await self._run(flows.request(self._api.messages(ticket_id)))

    async def post(self, ticket_id: int, body: str, data: Any = None) -> Message:
        return await self._run(flows.request(self._api.post(ticket_id, body, data)))

    async def answer(self, ticket_id: int, text: str | None = None, data: Any = None
                     ) -> Ticket:
        return await self._run(flows.request(self._api.answer(ticket_id, text, data)))

    async def approve(self, ticket_id: int, comment: str | None = None, edited: Any = None
                      ) -> Ticket:
        return await self._run(flows.request(self._api.approve(ticket_id, comment, edited)))

    async def deny(self, ticket_id: int, reason: str | None = None) -> Ticket:
        return await self._run(flows.request(self._api.deny(ticket_id, reason)))

    async def transition(self, ticket_id: int, to: str, until: When | None = None,
                         reason: str | None = None) -> Ticket:
        return await self._run(flows.request(
            self._api.transition(ticket_id, to, until, reason)))

    async def assign(self, ticket_id: int, who: str | None) -> Ticket:
        return await self._run(flows.request(self._api.assign(ticket_id, who)))

    async def label(self, ticket_id: int, add: Iterable[str] = (), remove: Iterable[str] = ()
                    ) -> Ticket:
        return await self._run(flows.request(self._api.label(ticket_id, add, remove)))

    async def wait(self, ticket_id: int, timeout: float | None = None) -> Ticket:
        return await self._run(flows.wait(self._api, ticket_id, timeout, self.poll_seconds,
                                          self.backoff))

    # -- events --------------------------------------------------------------------------

    def events(self, since: int = 0, ticket_id: int | None = None,
               subtree: int | None = None) -> AsyncIterator[Event]:
        return self._loop(flows.events(self._api, since, ticket_id, subtree), result=False)

    def stream_events(self, since: int | None = None, ticket_id: int | None = None,
                      subtree: int | None = None) -> AsyncIterator[Event]:
        """Without ``since``, starts at the end of the log when first iterated."""
        return self._loop(flows.event_stream(self._api, since, ticket_id, subtree,
                                             self.backoff), result=False)

    # -- who and tokens --------------------------------------------------------------------

    async def me(self) -> dict[str, Any]:
        return await self._run(flows.request(self._api.me()))

    async def health(self) -> dict[str, Any]:
        return await self._run(flows.request(self._api.health()))

    async def create_token(self, role: str, name: str, scopes: Sequence[str] = ()) -> str:
        return await self._run(flows.request(self._api.create_token(role, name, scopes)))

    async def tokens(self) -> builtins.list[TokenInfo]:
        return await self._run(flows.request(self._api.tokens()))

    async def revoke_token(self, token_id: int) -> None:
        await self._run(flows.request(self._api.revoke_token(token_id)))
