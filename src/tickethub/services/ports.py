"""The ports services depend on. Adapters live in ``store/``, ``bus/`` and ``server/``;
in-memory fakes live in ``tickethub.testing`` and pass the same contract tests."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from tickethub.domain.actors import Actor
from tickethub.domain.events import Event, NewEvent
from tickethub.domain.messages import Decision, Message, MessageDraft, MessageKind

# Record types live in ``domain.records``; named here too, as they always were.
from tickethub.domain.records import Delivery as Delivery
from tickethub.domain.records import TokenRecord as TokenRecord
from tickethub.domain.records import Webhook as Webhook
from tickethub.domain.tickets import Moved, Overdue, Ticket, TicketDraft, TicketQuery


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SecretGenerator(Protocol):
    def token(self) -> str:
        """A new unguessable API token."""
        ...


class Notifier(Protocol):
    def notify(self, seq: int, tickets: Sequence[Ticket | Moved], touched: Sequence[int] = ()
               ) -> None:
        """Wake whoever waits on these tickets or on the event log; called after commit
        with the tickets' new state (a whole ``Ticket``, or a ``Moved``: only the status
        changed), so waiters need not read them back. ``touched``:
        ids of tickets that got something besides a new state (a message); their
        waiters read back what they need."""
        ...


class TicketRepository(Protocol):
    def add(self, draft: TicketDraft, created_by: str, at: datetime,
            idempotency_key: str | None = None, request_hash: str | None = None) -> Ticket: ...
    def add_many(self, drafts: Sequence[tuple[TicketDraft, str]], at: datetime,
                 keys: Sequence[tuple[str | None, str | None]] | None = None
                 ) -> builtins.list[Ticket]:
        """``add`` for several ``(draft, created_by)``, in a few statements; ``keys``:
        each one's ``(idempotency_key, request_hash)``."""
        ...
    def get(self, ticket_id: int, *, for_update: bool = False) -> Ticket | None: ...
    def get_many(self, ticket_ids: Sequence[int], *, for_update: bool = False
                 ) -> dict[int, Ticket]:
        """The ones of ``ticket_ids`` that exist, by id, in one read."""
        ...
    def update_many(self, changes: Sequence[tuple[Ticket, int]]) -> None:
        """Write each ``(ticket, expected_version)``, all read with
        ``get_many(for_update=True)`` in this transaction at that version, at once."""
        ...
    def find_idempotent(self, created_by: str, key: str) -> tuple[Ticket, str | None] | None: ...
    def find_idempotent_many(self, created_by: str, keys: Sequence[str]
                             ) -> dict[str, tuple[Ticket, str | None]]:
        """``find_idempotent`` for many keys at once: the stored ones by key."""
        ...
    def update(self, ticket: Ticket, expected_version: int) -> bool:
        """Write ``ticket`` if the stored version is ``expected_version``; False if not."""
        ...
    def list(self, query: TicketQuery) -> builtins.list[Ticket]: ...
    def subtree(self, root: Ticket, depth: int, reader: str | None = None
                ) -> builtins.list[Ticket]:
        """Descendants of ``root``; with ``reader``, only those that name reads."""
        ...
    def readable(self, ticket_id: int, name: str) -> bool:
        """Whether ``name`` reads the ticket (``domain.visibility``), as SQL decides."""
        ...
    def overdue(self, now: datetime, limit: int, *, for_update: bool = False
                ) -> builtins.list[Ticket]:
        """Waiting tickets past ``due_at``; ``for_update``: locked for ``update_many``."""
        ...
    def expire_overdue(self, now: datetime, limit: int) -> builtins.list[Overdue]:
        """Up to ``limit`` waiting tickets past ``due_at``, earliest first, moved to
        ``expired`` at ``now`` (version + 1) in this transaction; returned as they were.
        Rows another transaction holds are skipped, so each ticket expires once."""
        ...
    def defer_elapsed(self, now: datetime, limit: int, *, for_update: bool = False
                      ) -> builtins.list[Ticket]:
        """Deferred tickets whose time came; ``for_update`` as in ``overdue``."""
        ...
    def next_deadline(self) -> datetime | None: ...
    def count(self) -> int: ...


class MessageRepository(Protocol):
    def add(self, ticket_id: int, author: str, via: str, body: str, kind: MessageKind,
            trusted: bool, at: datetime, external_id: str | None = None,
            data: Any = None, decision: Decision | None = None) -> Message: ...
    def add_many(self, drafts: Sequence[MessageDraft], at: datetime
                 ) -> builtins.list[Message]: ...
    def find_external(self, via: str, external_id: str) -> Message | None: ...
    def find_external_many(self, via: str, external_ids: Sequence[str]) -> dict[str, Message]:
        """``find_external`` for many outside ids at once: the stored ones by id."""
        ...
    def for_ticket(self, ticket_id: int) -> builtins.list[Message]: ...


class EventLog(Protocol):
    def append(self, event: NewEvent, at: datetime) -> Event: ...
    def append_many(self, events: Sequence[NewEvent], at: datetime) -> builtins.list[Event]:
        """Append in one go; seqs ascend in list order."""
        ...
    def since(self, seq: int, *, limit: int, ticket_id: int | None = None,
              path_prefix: str | None = None, reader: str | None = None,
              until: int | None = None) -> builtins.list[Event]:
        """Events after ``seq`` (and at most ``until``), oldest first; with ``reader``
        only those about tickets that name reads."""
        ...
    def ticket_seqs(self, after: int, until: int, limit: int
                    ) -> builtins.list[tuple[int, int]]:
        """``(seq, ticket_id)`` of the events after ``after`` up to ``until``, oldest
        first, at most ``limit``: which tickets changed, without reading the events."""
        ...
    def last_seq(self) -> int: ...


class ActorRepository(Protocol):
    def get(self, name: str) -> Actor | None: ...
    def add(self, actor: Actor, at: datetime) -> Actor: ...
    def add_token(self, actor: Actor, name: str, token_hash: str, prefix: str,
                  at: datetime, scopes: frozenset[str] = frozenset()) -> TokenRecord: ...
    def by_token_hash(self, token_hash: str) -> Actor | None:
        """The actor of an unrevoked token, with the token's ``scopes``."""
        ...
    def tokens(self) -> builtins.list[TokenRecord]: ...
    def revoke_token(self, token_id: int, at: datetime) -> bool: ...
    def count_admins(self) -> int: ...
    def lock_for_bootstrap(self) -> None:
        """Hold, until this transaction ends, the lock that makes the first admin's
        creation one at a time across hub processes starting together."""
        ...


class DeliveryRepository(Protocol):
    def cursor(self, channel: str, *, for_update: bool = False) -> int | None: ...
    def set_cursor(self, channel: str, seq: int) -> None: ...
    def enqueue(self, channel: str, target: str, event_seq: int, key: str,
                at: datetime) -> bool: ...
    def claim(self, channel: str, now: datetime, limit: int,
              until: datetime | None) -> builtins.list[Delivery]: ...
    def mark_delivered(self, delivery_id: int, at: datetime) -> None: ...
    def mark_failed(self, delivery_id: int, error: str, retry_at: datetime | None) -> None: ...
    def get(self, delivery_id: int) -> Delivery | None: ...
    def list(self, channel: str | None, status: str | None,
             limit: int) -> builtins.list[Delivery]: ...


class WebhookRepository(Protocol):
    def add(self, url: str, secret: str, event_types: tuple[str, ...], created_by: str,
            at: datetime) -> Webhook: ...
    def get(self, webhook_id: int) -> Webhook | None: ...
    def list(self) -> builtins.list[Webhook]: ...
    def delete(self, webhook_id: int) -> bool: ...


class UnitOfWork(Protocol):
    """The repositories of one transaction. Read-only members: a store's own unit of
    work may hold its own repository types (``SqlTicketRepository``) in them."""

    @property
    def tickets(self) -> TicketRepository: ...
    @property
    def messages(self) -> MessageRepository: ...
    @property
    def events(self) -> EventLog: ...
    @property
    def actors(self) -> ActorRepository: ...
    @property
    def deliveries(self) -> DeliveryRepository: ...
    @property
    def webhooks(self) -> WebhookRepository: ...


class Store(Protocol):
    def write(self) -> AbstractContextManager[UnitOfWork]:
        """A transaction that commits on clean exit and rolls back on error."""
        ...

    def read(self) -> AbstractContextManager[UnitOfWork]:
        """A read-only snapshot."""
        ...
