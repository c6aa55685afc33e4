"""People's passwords and browser sessions in SQL (the ``SessionStore`` port)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    delete,
    insert,
    select,
    update,
)

from tickethub.domain.actors import Actor, ActorKind, Role
from tickethub.domain.records import Session
from tickethub.store.sql_store import SqlStore
from tickethub.store.tables import actors, metadata
from tickethub.store.types import UTCDateTime

passwords = Table(
    "passwords",
    metadata,
    Column("actor_id", Integer, ForeignKey("actors.id"), primary_key=True),
    Column("hash", String(200), nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

web_sessions = Table(
    "web_sessions",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("actor_id", Integer, ForeignKey("actors.id"), nullable=False),
    Column("csrf", String(200), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    Index("ix_web_sessions_expires", "expires_at"),
)


login_links = Table(
    "login_links",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("actor_id", Integer, ForeignKey("actors.id"), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
)


def _actor(row: Any) -> Actor:
    return Actor(row.name, Role(row.role), ActorKind(row.kind), row.id)


class SqlSessionStore:
    def __init__(self, store: SqlStore) -> None:
        self._store = store

    def get_actor(self, name: str) -> Actor | None:
        with self._store.read() as uow:
            return uow.actors.get(name)

    def set_password(self, actor: Actor, password_hash: str, at: datetime) -> Actor:
        with self._store.write() as uow:
            stored = uow.actors.get(actor.name) or uow.actors.add(actor, at)
            c = uow.connection
            c.execute(delete(passwords).where(passwords.c.actor_id == stored.id))
            c.execute(insert(passwords).values(actor_id=stored.id, hash=password_hash,
                                               updated_at=at))
            return stored

    def password_of(self, name: str) -> tuple[Actor, str] | None:
        stmt = (select(actors, passwords.c.hash)
                .join(passwords, passwords.c.actor_id == actors.c.id)
                .where(actors.c.name == name))
        with self._store.read() as uow:
            row = uow.connection.execute(stmt).first()
        return (_actor(row), row.hash) if row else None

    def add_session(self, session: Session) -> None:
        with self._store.write() as uow:
            uow.connection.execute(insert(web_sessions).values(
                token_hash=session.token_hash, actor_id=session.actor.id, csrf=session.csrf,
                created_at=session.created_at, expires_at=session.expires_at))

    def get_session(self, token_hash: str) -> Session | None:
        stmt = (select(web_sessions, actors.c.name, actors.c.role, actors.c.kind,
                       actors.c.id.label("aid"))
                .join(actors, actors.c.id == web_sessions.c.actor_id)
                .where(web_sessions.c.token_hash == token_hash))
        with self._store.read() as uow:
            row = uow.connection.execute(stmt).first()
        if row is None:
            return None
        actor = Actor(row.name, Role(row.role), ActorKind(row.kind), row.aid)
        return Session(row.token_hash, actor, row.csrf, row.created_at, row.expires_at)

    def renew_session(self, token_hash: str, expires_at: datetime) -> None:
        with self._store.write() as uow:
            uow.connection.execute(update(web_sessions)
                                   .where(web_sessions.c.token_hash == token_hash)
                                   .values(expires_at=expires_at))

    def delete_session(self, token_hash: str) -> None:
        with self._store.write() as uow:
            uow.connection.execute(delete(web_sessions)
                                   .where(web_sessions.c.token_hash == token_hash))

    def add_link(self, token_hash: str, actor: Actor, at: datetime,
                 expires_at: datetime) -> None:
        with self._store.write() as uow:
            uow.connection.execute(delete(login_links).where(login_links.c.expires_at <= at))
            uow.connection.execute(insert(login_links).values(
                token_hash=token_hash, actor_id=actor.id, created_at=at, expires_at=expires_at))

    def take_link(self, token_hash: str, now: datetime) -> Actor | None:
        stmt = (select(actors).join(login_links, login_links.c.actor_id == actors.c.id)
                .where(login_links.c.token_hash == token_hash,
                       login_links.c.expires_at > now))
        with self._store.write() as uow:
            row = uow.connection.execute(stmt).first()
            uow.connection.execute(delete(login_links)
                                   .where(login_links.c.token_hash == token_hash))
        return _actor(row) if row else None

    def delete_expired(self, now: datetime) -> int:
        with self._store.write() as uow:
            result = uow.connection.execute(delete(web_sessions)
                                            .where(web_sessions.c.expires_at <= now))
            return int(result.rowcount or 0)
