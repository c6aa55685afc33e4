"""Every request the SDK makes, described once, without doing any I/O.

A :class:`Call` says what to send (method, path, query, JSON body, headers, read timeout)
and how to read the reply (``parse``). :class:`Endpoints` builds the calls for one hub;
:class:`~tickethub.sdk.client.Hub` and :class:`~tickethub.sdk.async_client.AsyncHub` only
carry them over the wire, so the two clients cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from tickethub.sdk.errors import error_from_response
from tickethub.sdk.models import Event, Message, Ticket, TokenInfo, TreeNode

if TYPE_CHECKING:
    from tickethub.sdk.async_client import AsyncHub
    from tickethub.sdk.client import Hub

T = TypeVar("T")
API = "/api/v1"
_NO_BODY = object()

#: Deadlines may be given as an aware datetime, an ISO 8601 string, or a timedelta from now.
When = datetime | str | timedelta


@dataclass(frozen=True)
class Call(Generic[T]):
    """One HTTP request and the function that turns its (successful) reply into a value."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = _NO_BODY
    headers: dict[str, str] = field(default_factory=dict)
    read_timeout: float | None = None  # None: the client's default

    def build(self, client: httpx.Client | httpx.AsyncClient) -> httpx.Request:
        params = {k: v for k, v in self.params.items() if v is not None and v != []}
        kwargs: dict[str, Any] = {"params": params, "headers": self.headers}
        if self.json is not _NO_BODY:
            kwargs["json"] = self.json
        if self.read_timeout is not None:
            default = client.timeout
            kwargs["timeout"] = httpx.Timeout(default.connect, read=self.read_timeout,
                                              write=default.write, pool=default.pool)
        return client.build_request(self.method, self.path, **kwargs)


def iso(when: When | None, name: str) -> str | None:
    """``when`` as the ISO 8601 string the API takes; naive datetimes are refused because
    a deadline in an unknown time zone is a bug waiting to happen."""
    if when is None or isinstance(when, str):
        return when
    if isinstance(when, timedelta):
        return (datetime.now(UTC) + when).isoformat()
    if when.tzinfo is None:
        raise ValueError(f"{name} must be timezone-aware (e.g. datetime.now(UTC))")
    return when.isoformat()


class Endpoints:
    """Builds the :class:`Call` for each API operation, for one hub (tickets it parses
    are bound to that hub, so ``ticket.wait()`` works)."""

    def __init__(self, hub: Hub | AsyncHub | None, *, has_token: bool) -> None:
        self._hub = hub
        self.has_token = has_token

    # -- reading replies ------------------------------------------------------------

    def check(self, response: httpx.Response) -> httpx.Response:
        """The response itself, or the :class:`HubError` it stands for."""
        if response.status_code >= 400:
            raise error_from_response(response, has_token=self.has_token)
        return response

    def ticket(self, response: httpx.Response) -> Ticket:
        return Ticket.from_json(self.check(response).json(), self._hub)

    def _json(self, response: httpx.Response) -> Any:
        return self.check(response).json()

    def _nothing(self, response: httpx.Response) -> None:
        self.check(response)

    def ticket_page(self, response: httpx.Response) -> tuple[list[Ticket], str | None]:
        page = self._json(response)
        return [Ticket.from_json(t, self._hub) for t in page["items"]], page["next_cursor"]

    def event_page(self, response: httpx.Response) -> tuple[list[Event], int]:
        page = self._json(response)
        return [Event.from_json(e) for e in page["items"]], page["last_seq"]

    # -- tickets -----------------------------------------------------------------------

    def ask(self, title: str, body: str = "", kind: str = "question",
            labels: Iterable[str] = (), parent_id: int | None = None,
            assignee: str | None = None, due_at: When | None = None,
            response_schema: dict[str, Any] | None = None, proposal: Any = None,
            refs: dict[str, Any] | None = None, idempotency_key: str | None = None) -> Call[Ticket]:
        payload: dict[str, Any] = {"title": title, "body": body, "kind": kind,
                                   "labels": list(labels)}
        optional = {"parent_id": parent_id, "assignee": assignee,
                    "due_at": iso(due_at, "due_at"), "response_schema": response_schema,
                    "proposal": proposal, "refs": refs}
        payload.update({k: v for k, v in optional.items() if v is not None})
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return Call("POST", f"{API}/tickets", self.ticket, json=payload, headers=headers)

    def get(self, ticket_id: int) -> Call[Ticket]:
        return Call("GET", f"{API}/tickets/{int(ticket_id)}", self.ticket)

    def tickets(self, *, status: str | Iterable[str] | None = None, kind: str | None = None,
             label: str | None = None, assignee: str | None = None,
             parent_id: int | None = None, created_by: str | None = None,
             q: str | None = None, ref: str | None = None, cursor: str | None = None,
             limit: int = 50) -> Call[tuple[list[Ticket], str | None]]:
        statuses = [status] if isinstance(status, str) else list(status or ())
        return Call("GET", f"{API}/tickets", self.ticket_page, params={
            "status": statuses, "kind": kind, "label": label, "assignee": assignee,
            "parent_id": parent_id, "created_by": created_by, "q": q, "ref": ref,
            "cursor": cursor, "limit": limit})

    def tree(self, ticket_id: int, depth: int = 3) -> Call[TreeNode]:
        return Call("GET", f"{API}/tickets/{int(ticket_id)}/tree",
                    lambda r: TreeNode.from_json(self._json(r), self._hub),
                    params={"depth": depth})

    def messages(self, ticket_id: int) -> Call[list[Message]]:
        return Call("GET", f"{API}/tickets/{int(ticket_id)}/messages",
                    lambda r: [Message.from_json(m) for m in self._json(r)])

    def post(self, ticket_id: int, body: str, data: Any = None) -> Call[Message]:
        payload: dict[str, Any] = {"body": body}
        if data is not None:
            payload["data"] = data
        return Call("POST", f"{API}/tickets/{int(ticket_id)}/messages",
                    lambda r: Message.from_json(self._json(r)), json=payload)

    def _change(self, ticket_id: int, action: str, payload: dict[str, Any]
                ) -> Call[Ticket]:
        return Call("POST", f"{API}/tickets/{int(ticket_id)}/{action}", self.ticket,
                    json=payload)

    def answer(self, ticket_id: int, text: str | None = None, data: Any = None
               ) -> Call[Ticket]:
        return self._change(ticket_id, "answer", {"text": text, "data": data})

    def approve(self, ticket_id: int, comment: str | None = None, edited: Any = None
                ) -> Call[Ticket]:
        return self._change(ticket_id, "approve", {"comment": comment, "edited": edited})

    def deny(self, ticket_id: int, reason: str | None = None) -> Call[Ticket]:
        return self._change(ticket_id, "deny", {"reason": reason})

    def transition(self, ticket_id: int, to: str, until: When | None = None,
                   reason: str | None = None) -> Call[Ticket]:
        return self._change(ticket_id, "transition",
                            {"to": to, "until": iso(until, "until"), "reason": reason})

    def assign(self, ticket_id: int, who: str | None) -> Call[Ticket]:
        return self._change(ticket_id, "assign", {"assignee": who})

    def label(self, ticket_id: int, add: Iterable[str] = (), remove: Iterable[str] = ()
              ) -> Call[Ticket]:
        return self._change(ticket_id, "labels", {"add": list(add), "remove": list(remove)})

    def wait(self, ticket_id: int, seconds: float) -> Call[Ticket]:
        # The read timeout leaves the server room to answer at the end of the poll.
        return Call("GET", f"{API}/tickets/{int(ticket_id)}/wait", self.ticket,
                    params={"timeout": round(seconds, 3)}, read_timeout=seconds + 15)

    # -- events ------------------------------------------------------------------------

    def events(self, since: int, *, ticket_id: int | None = None, subtree: int | None = None,
               limit: int = 100) -> Call[tuple[list[Event], int]]:
        return Call("GET", f"{API}/events", self.event_page, params={
            "since": since, "ticket_id": ticket_id, "subtree": subtree, "limit": limit})

    def event_stream(self, since: int, *, resume: bool, ticket_id: int | None = None,
                     subtree: int | None = None, read_timeout: float = 60.0
                     ) -> Call[httpx.Response]:
        """The SSE request: a first connection sends ``since``, a reconnection sends
        ``Last-Event-ID`` (the seq of the last event received), as browsers do."""
        params: dict[str, Any] = {"ticket_id": ticket_id, "subtree": subtree}
        headers = {"Accept": "text/event-stream"}
        if resume:
            headers["Last-Event-ID"] = str(since)
        else:
            params["since"] = since
        return Call("GET", f"{API}/events/stream", self.check, params=params,
                    headers=headers, read_timeout=read_timeout)

    def health(self) -> Call[dict[str, Any]]:
        return Call("GET", "/healthz", self._json)

    # -- who and tokens ------------------------------------------------------------------

    def me(self) -> Call[dict[str, Any]]:
        return Call("GET", f"{API}/me", self._json)

    def create_token(self, role: str, name: str, scopes: Sequence[str] = ()) -> Call[str]:
        body: dict[str, Any] = {"role": role, "name": name}
        if scopes:
            body["scopes"] = list(scopes)
        return Call("POST", f"{API}/tokens", lambda r: str(self._json(r)["token"]),
                    json=body)

    def tokens(self) -> Call[list[TokenInfo]]:
        return Call("GET", f"{API}/tokens",
                    lambda r: [TokenInfo.from_json(t) for t in self._json(r)])

    def revoke_token(self, token_id: int) -> Call[None]:
        return Call("DELETE", f"{API}/tokens/{int(token_id)}", self._nothing)
