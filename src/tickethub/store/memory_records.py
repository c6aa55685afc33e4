"""Messages, events, actors and tokens, deliveries and webhooks in memory: the
contracts of ``store/records.py`` over the dicts of ``memory_state``."""

from __future__ import annotations

import bisect
import builtins
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from tickethub.domain.actors import Actor, Role
from tickethub.domain.events import Event, NewEvent
from tickethub.domain.messages import Decision, Message, MessageDraft, MessageKind
from tickethub.domain.records import Delivery, TokenRecord, Webhook
from tickethub.store.memory_state import (
    Changes,
    ConstraintViolation,
    MemoryState,
    TokenRow,
    as_json,
    as_utc,
)
from tickethub.store.memory_tickets import readable_row


class MemoryMessageRepository:
    def __init__(self, state: MemoryState, changes: Changes) -> None:
        self._s = state
        self._changes = changes

    def add(self, ticket_id: int, author: str, via: str, body: str, kind: MessageKind,
            trusted: bool, at: datetime, external_id: str | None = None,
            data: Any = None, decision: Decision | None = None) -> Message:
        draft = MessageDraft(ticket_id, author, via, body, kind, trusted, external_id, data,
                             decision)
        return self.add_many([draft], at)[0]

    def add_many(self, drafts: Sequence[MessageDraft], at: datetime) -> builtins.list[Message]:
        keys = [(d.via, d.external_id) for d in drafts if d.external_id is not None]
        for d in drafts:
            if d.ticket_id not in self._s.tickets:
                raise ConstraintViolation(f"no ticket {d.ticket_id} for a message")
        if len(set(keys)) != len(keys) or any(k in self._s.external_ids for k in keys):
            raise ConstraintViolation("a message with this outside id is stored already")
        added = []
        for message_id, d in zip(self._s.next_ids("messages", len(drafts)), drafts,
                                 strict=True):
            message = Message(id=message_id, ticket_id=d.ticket_id, author=d.author,
                              via=d.via, body=d.body, kind=d.kind, trusted=d.trusted,
                              created_at=at, external_id=d.external_id, data=d.data,
                              decision=d.decision)
            self._changes.put(self._s.messages, message_id,
                              replace(message, data=as_json(d.data), created_at=as_utc(at)))
            if d.external_id is not None:
                self._changes.put(self._s.external_ids, (d.via, d.external_id), message_id)
            added.append(message)
        return added

    def find_external(self, via: str, external_id: str) -> Message | None:
        message_id = self._s.external_ids.get((via, external_id))
        return None if message_id is None else _copy(self._s.messages[message_id])

    def find_external_many(self, via: str, external_ids: Sequence[str]) -> dict[str, Message]:
        found: dict[str, Message] = {}
        for external_id in external_ids:
            message_id = self._s.external_ids.get((via, external_id))
            if message_id is not None:
                found[external_id] = _copy(self._s.messages[message_id])
        return found

    def for_ticket(self, ticket_id: int) -> builtins.list[Message]:
        return [_copy(m) for m in self._s.messages.values() if m.ticket_id == ticket_id]


def _copy(message: Message) -> Message:
    return message if message.data is None else replace(message, data=as_json(message.data))


class MemoryEventLog:
    """Seqs ascend in commit order: the store runs one transaction at a time."""

    def __init__(self, state: MemoryState, changes: Changes) -> None:
        self._s = state
        self._changes = changes

    def append(self, event: NewEvent, at: datetime) -> Event:
        return self.append_many([event], at)[0]

    def append_many(self, new: Sequence[NewEvent], at: datetime) -> builtins.list[Event]:
        appended = []
        for seq, e in zip(self._s.next_ids("events", len(new)), new, strict=True):
            event = Event(seq=seq, type=e.type, ticket_id=e.ticket_id,
                          ticket_path=e.ticket_path, actor=e.actor, data=e.data, at=at)
            self._changes.append(self._s.events,
                                 replace(event, data=as_json(e.data), at=as_utc(at)))
            appended.append(event)
        return appended

    def since(self, seq: int, *, limit: int, ticket_id: int | None = None,
              path_prefix: str | None = None, reader: str | None = None,
              until: int | None = None) -> builtins.list[Event]:
        log = self._s.events
        found: builtins.list[Event] = []
        for event in log[bisect.bisect_right(log, seq, key=lambda e: e.seq):]:
            if len(found) >= limit or (until is not None and event.seq > until):
                break
            if ticket_id is not None and event.ticket_id != ticket_id:
                continue
            if path_prefix is not None and not event.ticket_path.startswith(path_prefix):
                continue
            if reader is not None:
                row = self._s.tickets.get(event.ticket_id)
                if row is None or not readable_row(self._s, row, reader):
                    continue
            found.append(replace(event, data=as_json(event.data)))
        return found

    def ticket_seqs(self, after: int, until: int, limit: int
                    ) -> builtins.list[tuple[int, int]]:
        log = self._s.events
        start = bisect.bisect_right(log, after, key=lambda e: e.seq)
        stop = bisect.bisect_right(log, until, key=lambda e: e.seq)
        return [(e.seq, e.ticket_id) for e in log[start:min(stop, start + limit)]]

    def last_seq(self) -> int:
        return self._s.events[-1].seq if self._s.events else 0


class MemoryActorRepository:
    def __init__(self, state: MemoryState, changes: Changes) -> None:
        self._s = state
        self._changes = changes

    def get(self, name: str) -> Actor | None:
        found = self._s.actors.get(name)
        return found[0] if found else None

    def add(self, actor: Actor, at: datetime) -> Actor:
        if actor.name in self._s.actors:
            raise ConstraintViolation(f"actor {actor.name!r} exists")
        [actor_id] = self._s.next_ids("actors", 1)
        stored = Actor(name=actor.name, role=actor.role, kind=actor.kind, id=actor_id)
        self._changes.put(self._s.actors, actor.name, (stored, as_utc(at)))
        return stored

    def add_token(self, actor: Actor, name: str, token_hash: str, prefix: str,
                  at: datetime, scopes: frozenset[str] = frozenset()) -> TokenRecord:
        owner = next((a for a, _ in self._s.actors.values() if a.id == actor.id), None)
        if owner is None:
            raise ConstraintViolation(f"no actor with id {actor.id} for a token")
        if token_hash in self._s.token_hashes:
            raise ConstraintViolation("this token hash is stored already")
        [token_id] = self._s.next_ids("tokens", 1)
        self._changes.put(self._s.tokens, token_id, TokenRow(
            token_id, owner.name, name, token_hash, prefix, as_utc(at), None,
            frozenset(scopes)))
        self._changes.put(self._s.token_hashes, token_hash, token_id)
        return TokenRecord(token_id, actor, name, prefix, at, None, scopes)

    def by_token_hash(self, token_hash: str) -> Actor | None:
        token_id = self._s.token_hashes.get(token_hash)
        if token_id is None:
            return None
        token = self._s.tokens[token_id]
        if token.revoked_at is not None:
            return None
        return replace(self._s.actors[token.actor_name][0], scopes=token.scopes)

    def tokens(self) -> builtins.list[TokenRecord]:
        return [TokenRecord(t.id, self._s.actors[t.actor_name][0], t.name, t.prefix,
                            t.created_at, t.revoked_at, t.scopes)
                for t in self._s.tokens.values()]

    def revoke_token(self, token_id: int, at: datetime) -> bool:
        token = self._s.tokens.get(token_id)
        if token is None or token.revoked_at is not None:
            return False
        self._changes.put(self._s.tokens, token_id, replace(token, revoked_at=as_utc(at)))
        return True

    def count_admins(self) -> int:
        return sum(1 for a, _ in self._s.actors.values() if a.role is Role.ADMIN)

    def lock_for_bootstrap(self) -> None:
        pass  # one lock already orders every memory transaction


class MemoryDeliveryRepository:
    def __init__(self, state: MemoryState, changes: Changes) -> None:
        self._s = state
        self._changes = changes

    def cursor(self, channel: str, *, for_update: bool = False) -> int | None:
        # One lock orders every memory transaction: the cursor is already held.
        return self._s.cursors.get(channel)

    def set_cursor(self, channel: str, seq: int) -> None:
        self._changes.put(self._s.cursors, channel, seq)

    def enqueue(self, channel: str, target: str, event_seq: int, key: str,
                at: datetime) -> bool:
        if key in self._s.delivery_keys:
            return False
        [delivery_id] = self._s.next_ids("deliveries", 1)
        self._changes.put(self._s.deliveries, delivery_id, Delivery(
            delivery_id, channel, target, event_seq, key, "pending", 0,
            as_utc(at), None))
        self._changes.put(self._s.delivery_keys, key, delivery_id)
        return True

    def claim(self, channel: str, now: datetime, limit: int,
              until: datetime | None) -> builtins.list[Delivery]:
        found = sorted((d for d in self._s.deliveries.values()
                        if d.channel == channel and d.status == "pending"
                        and d.next_attempt_at <= now), key=lambda d: d.id)[:max(limit, 0)]
        if until is not None:
            for d in found:
                self._changes.put(self._s.deliveries, d.id,
                                  replace(d, next_attempt_at=as_utc(until)))
        return found

    def _change(self, delivery_id: int, **fields: Any) -> None:
        found = self._s.deliveries.get(delivery_id)
        if found is not None:
            self._changes.put(self._s.deliveries, delivery_id, replace(
                found, attempts=found.attempts + 1, **fields))

    def mark_delivered(self, delivery_id: int, at: datetime) -> None:
        self._change(delivery_id, status="delivered", last_error=None)

    def mark_failed(self, delivery_id: int, error: str, retry_at: datetime | None) -> None:
        if retry_at is None:
            self._change(delivery_id, status="dead", last_error=error[:2000])
        else:
            self._change(delivery_id, next_attempt_at=as_utc(retry_at),
                         last_error=error[:2000])

    def get(self, delivery_id: int) -> Delivery | None:
        return self._s.deliveries.get(delivery_id)

    def list(self, channel: str | None, status: str | None, limit: int
             ) -> builtins.list[Delivery]:
        return [d for d in reversed(self._s.deliveries.values())
                if (not channel or d.channel == channel)
                and (not status or d.status == status)][:max(limit, 0)]


class MemoryWebhookRepository:
    def __init__(self, state: MemoryState, changes: Changes) -> None:
        self._s = state
        self._changes = changes

    def add(self, url: str, secret: str, event_types: tuple[str, ...], created_by: str,
            at: datetime) -> Webhook:
        [webhook_id] = self._s.next_ids("webhooks", 1)
        self._changes.put(self._s.webhooks, webhook_id, Webhook(
            webhook_id, url, secret, tuple(event_types), created_by,
            as_utc(at), True))
        return Webhook(webhook_id, url, secret, event_types, created_by, at, True)

    def get(self, webhook_id: int) -> Webhook | None:
        return self._s.webhooks.get(webhook_id)

    def list(self) -> builtins.list[Webhook]:
        return [w for w in self._s.webhooks.values() if w.active]

    def delete(self, webhook_id: int) -> bool:
        found = self._s.webhooks.get(webhook_id)
        if found is None or not found.active:
            return False
        self._changes.put(self._s.webhooks, webhook_id, replace(found, active=False))
        return True
