"""``Hub``: the blocking client. Each method builds its request in
:mod:`tickethub.sdk.calls` and multi-step logic lives in :mod:`tickethub.sdk.flows`;
this module only carries them over ``httpx.Client``."""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import closing
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


class Hub(HubConfig):
    """A connection to a tickethub.

    >>> hub = Hub()                                   # $TICKETHUB_URL, $TICKETHUB_TOKEN
    >>> ticket = hub.ask("Deploy v2 to prod?", kind="approval")
    >>> ticket = ticket.wait()                        # blocks until a person decides
    >>> ticket.approved
    True

    Every method raises :class:`~tickethub.sdk.errors.HubError` (or a subclass) when the
    hub refuses or cannot be reached; only :meth:`wait` and :meth:`stream_events` ride out
    an unreachable or restarting hub. Use it as a context manager, or call :meth:`close`.
    One Hub may be shared between threads (as its ``httpx.Client`` may), e.g. one thread
    waiting while another asks.
    """

    def __init__(self, url: str | None = None, token: str | None = None,
                 timeout: float = 30.0, *, via: str | None = None,
                 headers: Mapping[str, str] | None = None,
                 poll_seconds: float = DEFAULT_POLL_SECONDS, backoff: Backoff | None = None,
                 on_retry: Callable[[HubError, float], None] | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        super().__init__(url, token, timeout, via=via, headers=headers,
                         poll_seconds=poll_seconds, backoff=backoff, on_retry=on_retry)
        self._client = httpx.Client(base_url=self.url, headers=self.headers, timeout=timeout,
                                    transport=transport)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Hub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the driver ----------------------------------------------------------------------

    def _loop(self, flow: Flow[Any], result: bool) -> Iterator[Any]:
        """Run ``flow``: perform its instructions, yield what it emits, and (when
        ``result``) finally yield its return value wrapped in ``_Done``."""
        value: Any = None
        error: BaseException | None = None
        stream: httpx.Response | None = None
        lines: Iterator[str] = iter(())
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
                        value = self._client.send(op.call.build(self._client))
                    elif isinstance(op, Open):
                        if stream is not None:
                            stream.close()
                        stream = value = self._client.send(op.call.build(self._client),
                                                           stream=True)
                        if stream.status_code >= 400:
                            stream.read()
                        lines = stream.iter_lines()
                    elif isinstance(op, ReadLine):
                        value = next(lines, None)
                    elif isinstance(op, Sleep):
                        if op.error is not None and self.on_retry is not None:
                            self.on_retry(op.error, op.seconds)
                        time.sleep(op.seconds)
                except httpx.TransportError as exc:
                    error = exc
        finally:
            flow.close()
            if stream is not None:
                stream.close()

    def _run(self, flow: Flow[T]) -> T:
        with closing(self._loop(flow, result=True)) as loop:  # type: ignore[type-var]
            return cast(T, next(loop).value)

    # -- tickets -------------------------------------------------------------------------

    def ask(self, title: str, body: str = "", kind: str = "question",
            labels: Iterable[str] = (), parent_id: int | None = None,
            assignee: str | None = None, due_at: When | None = None,
            response_schema: dict[str, Any] | None = None, proposal: Any = None,
            refs: dict[str, Any] | None = None, idempotency_key: str | None = None) -> Ticket:
        """Open a ticket (``kind``: question, approval, task, info) and return it at once.

        ``due_at`` (aware datetime, ISO string, or timedelta from now) makes an unanswered
        ticket expire; an approval then counts as denied. ``response_schema`` is a JSON
        Schema the answer's ``data`` (or an edited approval) must satisfy; ``proposal`` is
        the action an approval asks about. A retried ask with the same
        ``idempotency_key`` returns the first ticket instead of making a second.
        """
        return self._run(flows.request(self._api.ask(
            title, body, kind, labels, parent_id, assignee, due_at, response_schema,
            proposal, refs, idempotency_key)))

    def ask_and_wait(self, title: str, body: str = "", kind: str = "question", *,
                     timeout: float | None = None, **fields: Any) -> Ticket:
        """:meth:`ask`, then :meth:`wait` on the new ticket; ``fields`` as for ``ask``."""
        call = self._api.ask(title, body, kind, **fields)
        return self._run(flows.ask_and_wait(self._api, call, timeout, self.poll_seconds,
                                            self.backoff))

    def get(self, ticket_id: int) -> Ticket:
        """The ticket now (``NotFoundError`` if there is none)."""
        return self._run(flows.request(self._api.get(ticket_id)))

    def list(self, status: str | Iterable[str] | None = None, kind: str | None = None,
             label: str | None = None, assignee: str | None = None,
             parent_id: int | None = None, created_by: str | None = None,
             q: str | None = None, ref: str | None = None, limit: int = 50
             ) -> Iterator[Ticket]:
        """Every matching ticket, newest first, fetched ``limit`` per request as you
        iterate. ``q`` searches title, body and messages; ``ref`` is ``name=value``."""
        filters = {"status": status, "kind": kind, "label": label, "assignee": assignee,
                   "parent_id": parent_id, "created_by": created_by, "q": q, "ref": ref}
        return self._loop(flows.tickets(self._api, filters, limit), result=False)

    def tree(self, ticket_id: int, depth: int = 3) -> TreeNode:
        """The ticket and its descendants down to ``depth`` levels."""
        return self._run(flows.request(self._api.tree(ticket_id, depth)))

    def messages(self, ticket_id: int) -> builtins.list[Message]:
        """Messages on the ticket, oldest first."""
        return self._run(flows.request(self._api.messages(ticket_id)))

    def post(self, ticket_id: int, body: str, data: Any = None) -> Message:
        """Post a message (a comment; it does not resolve the ticket)."""
        return self._run(flows.request(self._api.post(ticket_id, body, data)))

    def answer(self, ticket_id: int, text: str | None = None, data: Any = None) -> Ticket:
        """Resolve a question, task or info ticket; ``data`` must fit its response_schema."""
        return self._run(flows.request(self._api.answer(ticket_id, text, data)))

    def approve(self, ticket_id: int, comment: str | None = None, edited: Any = None
                ) -> Ticket:
        """Approve an approval, optionally with an ``edited`` version of the proposal."""
        return self._run(flows.request(self._api.approve(ticket_id, comment, edited)))

    def deny(self, ticket_id: int, reason: str | None = None) -> Ticket:
        """Deny an approval."""
        return self._run(flows.request(self._api.deny(ticket_id, reason)))

    def transition(self, ticket_id: int, to: str, until: When | None = None,
                   reason: str | None = None) -> Ticket:
        """Move to ``in_progress``, ``done``, ``cancelled``, ``deferred`` (``until`` when)
        or back to ``open`` (reopen). An illegal move raises ``ConflictError``."""
        return self._run(flows.request(self._api.transition(ticket_id, to, until, reason)))

    def assign(self, ticket_id: int, who: str | None) -> Ticket:
        """Assign to ``who`` (``None`` unassigns)."""
        return self._run(flows.request(self._api.assign(ticket_id, who)))

    def label(self, ticket_id: int, add: Iterable[str] = (), remove: Iterable[str] = ()
              ) -> Ticket:
        """Add and remove labels."""
        return self._run(flows.request(self._api.label(ticket_id, add, remove)))

    def wait(self, ticket_id: int, timeout: float | None = None) -> Ticket:
        """Block until the ticket is resolved (answered, approved, denied, done,
        cancelled, expired) and return it; after ``timeout`` seconds return it as it is
        (``ticket.waiting`` still true). Survives hub restarts: connection errors and
        502/503/504 are retried with capped, jittered exponential backoff."""
        return self._run(flows.wait(self._api, ticket_id, timeout, self.poll_seconds,
                                    self.backoff))

    # -- events --------------------------------------------------------------------------

    def events(self, since: int = 0, ticket_id: int | None = None,
               subtree: int | None = None) -> Iterator[Event]:
        """Every event after seq ``since`` up to now, page by page."""
        return self._loop(flows.events(self._api, since, ticket_id, subtree), result=False)

    def stream_events(self, since: int | None = None, ticket_id: int | None = None,
                      subtree: int | None = None) -> Iterator[Event]:
        """Live events (Server-Sent Events) from ``since`` (default: now), forever;
        reconnects after drops and hub restarts, resuming with ``Last-Event-ID``.
        Break out of the loop (or ``close()`` the iterator) to stop."""
        if since is None:  # "now" is the moment of this call, not of the first next()
            since = int(self.health()["last_seq"])
        return self._loop(flows.event_stream(self._api, since, ticket_id, subtree,
                                             self.backoff), result=False)

    # -- who and tokens --------------------------------------------------------------------

    def me(self) -> dict[str, Any]:
        """``{"name", "role", "kind"}`` of the actor behind the token."""
        return self._run(flows.request(self._api.me()))

    def health(self) -> dict[str, Any]:
        """The hub's ``/healthz`` document (no token needed)."""
        return self._run(flows.request(self._api.health()))

    def create_token(self, role: str, name: str, scopes: Sequence[str] = ()) -> str:
        """(admin) A new token for actor ``name`` with ``role`` (agent, responder, admin)
        and ``scopes`` (e.g. ``read:all``). It is returned only this once; the hub keeps
        a hash."""
        return self._run(flows.request(self._api.create_token(role, name, scopes)))

    def tokens(self) -> builtins.list[TokenInfo]:
        """(admin) All tokens, without their secrets."""
        return self._run(flows.request(self._api.tokens()))

    def revoke_token(self, token_id: int) -> None:
        """(admin) Revoke a token; it stops working at once."""
        self._run(flows.request(self._api.revoke_token(token_id)))
