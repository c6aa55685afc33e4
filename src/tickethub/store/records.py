"""Messages, events, actors, tokens, deliveries and webhooks in SQL."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, func, insert, select, update

from tickethub.domain.actors import Actor, ActorKind, Role
from tickethub.domain.events import Event, EventType, NewEvent
from tickethub.domain.messages import Decision, Message, MessageDraft, MessageKind
from tickethub.domain.records import Delivery, TokenRecord, Webhook
from tickethub.ops import request_id
from tickethub.store import advisory_locks
from tickethub.store.bulk import insert_ids, inserted_id
from tickethub.store.tables import (
    actors,
    channel_cursors,
    deliveries,
    events,
    messages,
    tokens,
    webhooks,
)
from tickethub.store.visibility import event_readable_by

# Outside ids per ``IN (...)`` of a batched look-up: under every driver's parameter limit.
_IN_CHUNK = 500
_STORED_EXTERNAL = select(messages.c.external_id).where(
    messages.c.via == bindparam("via"),
    messages.c.external_id.in_(bindparam("ids", expanding=True)))


def message_from_row(row: Any) -> Message:
    """A ``messages`` row as a ``Message`` (``ap_records`` reads them too)."""
    return Message(
        id=row.id, ticket_id=row.ticket_id, author=row.author, via=row.via, body=row.body,
        kind=MessageKind(row.kind), trusted=row.trusted, created_at=row.created_at,
        external_id=row.external_id, data=row.data,
        decision=Decision(row.decision) if row.decision else None,
    )


class SqlMessageRepository:
    def __init__(self, connection: Connection) -> None:
        self._c = connection

    def add(self, ticket_id: int, author: str, via: str, body: str, kind: MessageKind,
            trusted: bool, at: datetime, external_id: str | None = None,
            data: Any = None, decision: Decision | None = None) -> Message:
        draft = MessageDraft(ticket_id, author, via, body, kind, trusted, external_id, data,
                             decision)
        return self.add_many([draft], at)[0]

    def add_many(self, drafts: Sequence[MessageDraft], at: datetime) -> list[Message]:
        ids = insert_ids(self._c, messages, [
            {"ticket_id": d.ticket_id, "author": d.author, "via": d.via, "body": d.body,
             "kind": d.kind.value, "trusted": d.trusted, "external_id": d.external_id,
             "data": d.data, "decision": d.decision.value if d.decision else None,
             "created_at": at} for d in drafts])
        return [Message(id=i, ticket_id=d.ticket_id, author=d.author, via=d.via, body=d.body,
                        kind=d.kind, trusted=d.trusted, created_at=at,
                        external_id=d.external_id, data=d.data, decision=d.decision)
                for i, d in zip(ids, drafts, strict=True)]

    def find_external(self, via: str, external_id: str) -> Message | None:
        row = self._c.execute(
            select(messages).where(messages.c.via == via, messages.c.external_id == external_id)
        ).first()
        return message_from_row(row) if row else None

    def find_external_many(self, via: str, external_ids: Sequence[str]) -> dict[str, Message]:
        """``find_external`` for many outside ids of one ``via``: the stored ones by
        outside id (the others left out), one query per ``_IN_CHUNK`` ids."""
        found: dict[str, Message] = {}
        wanted = sorted(set(external_ids))
        for start in range(0, len(wanted), _IN_CHUNK):
            # Which ids are stored, in a one-column query (new ones are the common case);
            # then the rows of those there are.
            stored = self._c.execute(_STORED_EXTERNAL, {
                "via": via, "ids": wanted[start:start + _IN_CHUNK]}).scalars().all()
            if not stored:
                continue
            rows = self._c.execute(select(messages).where(
                messages.c.via == via, messages.c.external_id.in_(stored)))
            for row in rows:
                found[row.external_id] = message_from_row(row)
        return found

    def for_ticket(self, ticket_id: int) -> list[Message]:
        rows = self._c.execute(
            select(messages).where(messages.c.ticket_id == ticket_id).order_by(messages.c.id)
        )
        return [message_from_row(row) for row in rows]


def _event(row: Any) -> Event:
    return Event(seq=row.seq, type=EventType(row.type), ticket_id=row.ticket_id,
                 ticket_path=row.ticket_path, actor=row.actor, data=row.data, at=row.at)


class SqlEventLog:
    """Appends are ordered: on PostgreSQL a transaction-scoped advisory lock makes commit
    order equal ``seq`` order, so a reader resuming after ``seq`` never skips a late
    commit. SQLite has one writer at a time and needs nothing."""

    def __init__(self, connection: Connection) -> None:
        self._c = connection
        self._locked = connection.dialect.name != "postgresql"

    def append(self, event: NewEvent, at: datetime) -> Event:
        return self.append_many([event], at)[0]

    def append_many(self, new: Sequence[NewEvent], at: datetime) -> list[Event]:
        """Append several events in one statement; their seqs ascend in list order."""
        if not self._locked:
            advisory_locks.hold_for_transaction(self._c, advisory_locks.EVENT_LOG)
            self._locked = True
        request = request_id.current()  # the HTTP request writing this, if any
        values = [{"type": e.type.value, "ticket_id": e.ticket_id,
                   "ticket_path": e.ticket_path, "actor": e.actor, "data": e.data, "at": at,
                   "request_id": e.request_id or request} for e in new]
        seqs = insert_ids(self._c, events, values)
        return [Event(seq=seq, type=e.type, ticket_id=e.ticket_id, ticket_path=e.ticket_path,
                      actor=e.actor, data=e.data, at=at)
                for seq, e in zip(seqs, new, strict=True)]

    def since(self, seq: int, *, limit: int, ticket_id: int | None = None,
              path_prefix: str | None = None, reader: str | None = None,
              until: int | None = None) -> list[Event]:
        stmt = select(events).where(events.c.seq > seq)
        if until is not None:
            stmt = stmt.where(events.c.seq <= until)
        if reader is not None:
            stmt = stmt.where(event_readable_by(reader))
        if ticket_id is not None:
            stmt = stmt.where(events.c.ticket_id == ticket_id)
        if path_prefix is not None:
            stmt = stmt.where(events.c.ticket_path.like(f"{path_prefix}%"))
        stmt = stmt.order_by(events.c.seq).limit(limit)
        return [_event(row) for row in self._c.execute(stmt)]

    def ticket_seqs(self, after: int, until: int, limit: int) -> list[tuple[int, int]]:
        stmt = (select(events.c.seq, events.c.ticket_id)
                .where(events.c.seq > after, events.c.seq <= until)
                .order_by(events.c.seq).limit(limit))
        return [(row.seq, row.ticket_id) for row in self._c.execute(stmt)]

    def last_seq(self) -> int:
        return int(self._c.execute(
            select(func.coalesce(func.max(events.c.seq), 0))).scalar_one())


def _scopes(text: str | None) -> frozenset[str]:
    return frozenset((text or "").split())


def _scopes_text(scopes: frozenset[str]) -> str:
    return " ".join(sorted(scopes))


def _actor(row: Any) -> Actor:
    return Actor(name=row.name, role=Role(row.role), kind=ActorKind(row.kind), id=row.id)


class SqlActorRepository:
    def __init__(self, connection: Connection) -> None:
        self._c = connection

    def get(self, name: str) -> Actor | None:
        row = self._c.execute(select(actors).where(actors.c.name == name)).first()
        return _actor(row) if row else None

    def add(self, actor: Actor, at: datetime) -> Actor:
        actor_id = inserted_id(self._c.execute(
            insert(actors).values(name=actor.name, kind=actor.kind.value, role=actor.role.value,
                                  created_at=at)))
        return Actor(name=actor.name, role=actor.role, kind=actor.kind, id=actor_id)

    def add_token(self, actor: Actor, name: str, token_hash: str, prefix: str,
                  at: datetime, scopes: frozenset[str] = frozenset()) -> TokenRecord:
        token_id = inserted_id(self._c.execute(
            insert(tokens).values(actor_id=actor.id, name=name, token_hash=token_hash,
                                  prefix=prefix, created_at=at, scopes=_scopes_text(scopes))))
        return TokenRecord(token_id, actor, name, prefix, at, None, scopes)

    def by_token_hash(self, token_hash: str) -> Actor | None:
        """The token's actor, carrying the token's scopes."""
        row = self._c.execute(
            select(actors, tokens.c.scopes)
            .join(tokens, tokens.c.actor_id == actors.c.id)
            .where(tokens.c.token_hash == token_hash, tokens.c.revoked_at.is_(None))
        ).first()
        return replace(_actor(row), scopes=_scopes(row.scopes)) if row else None

    def tokens(self) -> list[TokenRecord]:
        rows = self._c.execute(
            select(tokens, actors.c.name.label("actor_name"), actors.c.role, actors.c.kind,
                   actors.c.id.label("aid"))
            .join(actors, tokens.c.actor_id == actors.c.id)
            .order_by(tokens.c.id)
        )
        return [
            TokenRecord(r.id, Actor(r.actor_name, Role(r.role), ActorKind(r.kind), r.aid),
                        r.name, r.prefix, r.created_at, r.revoked_at, _scopes(r.scopes))
            for r in rows
        ]

    def revoke_token(self, token_id: int, at: datetime) -> bool:
        result = self._c.execute(
            update(tokens).where(tokens.c.id == token_id, tokens.c.revoked_at.is_(None))
            .values(revoked_at=at)
        )
        return result.rowcount == 1

    def count_admins(self) -> int:
        return int(self._c.execute(
            select(func.count()).select_from(actors).where(actors.c.role == Role.ADMIN.value)
        ).scalar() or 0)

    def lock_for_bootstrap(self) -> None:
        advisory_locks.hold_for_transaction(self._c, advisory_locks.BOOTSTRAP)


def _delivery(row: Any) -> Delivery:
    return Delivery(id=row.id, channel=row.channel, target=row.target, event_seq=row.event_seq,
                    idempotency_key=row.idempotency_key, status=row.status,
                    attempts=row.attempts, next_attempt_at=row.next_attempt_at,
                    last_error=row.last_error)


class SqlDeliveryRepository:
    def __init__(self, connection: Connection) -> None:
        self._c = connection

    def cursor(self, channel: str, *, for_update: bool = False) -> int | None:
        """The channel's cursor; ``for_update`` locks it for this transaction on
        PostgreSQL, so two hub processes do not enqueue the same events at once."""
        stmt = select(channel_cursors.c.last_seq).where(channel_cursors.c.channel == channel)
        if for_update and self._c.dialect.name == "postgresql":
            stmt = stmt.with_for_update()
        return self._c.execute(stmt).scalar()

    def set_cursor(self, channel: str, seq: int) -> None:
        changed = self._c.execute(
            update(channel_cursors).where(channel_cursors.c.channel == channel)
            .values(last_seq=seq)
        ).rowcount
        if not changed:
            self._c.execute(insert(channel_cursors).values(channel=channel, last_seq=seq))

    def enqueue(self, channel: str, target: str, event_seq: int, key: str,
                at: datetime) -> bool:
        exists = self._c.execute(
            select(deliveries.c.id).where(deliveries.c.idempotency_key == key)
        ).first()
        if exists:
            return False
        self._c.execute(insert(deliveries).values(
            channel=channel, target=target, event_seq=event_seq, idempotency_key=key,
            status="pending", attempts=0, next_attempt_at=at, created_at=at,
        ))
        return True

    def claim(self, channel: str, now: datetime, limit: int,
              until: datetime | None) -> list[Delivery]:
        """Pending deliveries due at ``now`` (up to ``limit``, oldest first), claimed
        until ``until``: their next attempt moves there, so no other hub process takes
        them meanwhile; recording the outcome ends the claim, and a claim whose process
        died runs out and the delivery is tried again. On PostgreSQL rows another
        process is claiming are skipped (``FOR UPDATE SKIP LOCKED``), not waited for."""
        stmt = (select(deliveries)
                .where(deliveries.c.channel == channel, deliveries.c.status == "pending",
                       deliveries.c.next_attempt_at <= now)
                .order_by(deliveries.c.id).limit(limit))
        if until is not None and self._c.dialect.name == "postgresql":
            stmt = stmt.with_for_update(skip_locked=True)
        found = [_delivery(r) for r in self._c.execute(stmt)]
        if found and until is not None:
            self._c.execute(update(deliveries)
                            .where(deliveries.c.id.in_([d.id for d in found]))
                            .values(next_attempt_at=until))
        return found

    def mark_delivered(self, delivery_id: int, at: datetime) -> None:
        self._c.execute(
            update(deliveries).where(deliveries.c.id == delivery_id)
            .values(status="delivered", delivered_at=at, attempts=deliveries.c.attempts + 1,
                    last_error=None)
        )

    def mark_failed(self, delivery_id: int, error: str, retry_at: datetime | None) -> None:
        values: dict[str, Any] = {"attempts": deliveries.c.attempts + 1,
                                  "last_error": error[:2000]}
        if retry_at is None:
            values["status"] = "dead"
        else:
            values["next_attempt_at"] = retry_at
        self._c.execute(update(deliveries).where(deliveries.c.id == delivery_id).values(values))

    def get(self, delivery_id: int) -> Delivery | None:
        row = self._c.execute(select(deliveries).where(deliveries.c.id == delivery_id)).first()
        return _delivery(row) if row else None

    def list(self, channel: str | None, status: str | None, limit: int) -> list[Delivery]:
        stmt = select(deliveries)
        if channel:
            stmt = stmt.where(deliveries.c.channel == channel)
        if status:
            stmt = stmt.where(deliveries.c.status == status)
        return [_delivery(r) for r in self._c.execute(
            stmt.order_by(deliveries.c.id.desc()).limit(limit))]


def _webhook(row: Any) -> Webhook:
    return Webhook(id=row.id, url=row.url, secret=row.secret,
                   event_types=tuple(row.event_types or ()), created_by=row.created_by,
                   created_at=row.created_at, active=row.active)


class SqlWebhookRepository:
    def __init__(self, connection: Connection) -> None:
        self._c = connection

    def add(self, url: str, secret: str, event_types: tuple[str, ...], created_by: str,
            at: datetime) -> Webhook:
        webhook_id = inserted_id(self._c.execute(insert(webhooks).values(
            url=url, secret=secret, event_types=list(event_types), created_by=created_by,
            created_at=at, active=True)))
        return Webhook(webhook_id, url, secret, event_types, created_by, at, True)

    def get(self, webhook_id: int) -> Webhook | None:
        row = self._c.execute(select(webhooks).where(webhooks.c.id == webhook_id)).first()
        return _webhook(row) if row else None

    def list(self) -> list[Webhook]:
        return [_webhook(r) for r in self._c.execute(
            select(webhooks).where(webhooks.c.active.is_(True)).order_by(webhooks.c.id))]

    def delete(self, webhook_id: int) -> bool:
        return self._c.execute(
            update(webhooks).where(webhooks.c.id == webhook_id, webhooks.c.active.is_(True))
            .values(active=False)
        ).rowcount == 1
