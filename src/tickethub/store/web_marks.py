"""A person's own web bookkeeping in SQL: read marks and saved views (the
``ReadMarkStore`` and ``SavedViewStore`` ports).

A read mark keeps ``seen_seq``, the end of the event log when it was made; the ticket is
read while no event on it after that seq was written by someone else (``ix_events_ticket``
makes that one index probe per ticket)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    Column,
    ForeignKey,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    and_,
    delete,
    exists,
    func,
    insert,
    select,
    update,
)

from tickethub.domain.records import SavedView
from tickethub.store.sql_store import SqlStore
from tickethub.store.tables import actors, events, metadata
from tickethub.store.types import UTCDateTime

web_reads = Table(
    "web_reads",
    metadata,
    Column("actor_id", Integer, ForeignKey("actors.id"), nullable=False),
    Column("ticket_id", Integer, ForeignKey("tickets.id"), nullable=False),
    Column("read_at", UTCDateTime, nullable=False),
    Column("seen_seq", Integer, nullable=False, server_default="0"),
    PrimaryKeyConstraint("actor_id", "ticket_id"),
)

web_saved_views = Table(
    "web_saved_views",
    metadata,
    Column("actor_id", Integer, ForeignKey("actors.id"), nullable=False),
    Column("name", String(60), nullable=False),
    Column("query", String(1000), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("actor_id", "name"),
)


class SqlReadMarks:
    def __init__(self, store: SqlStore) -> None:
        self._store = store

    def mark(self, actor_id: int, ticket_ids: list[int], read: bool, at: datetime) -> None:
        with self._store.write() as uow:
            c = uow.connection
            have = set(c.execute(select(web_reads.c.ticket_id).where(
                web_reads.c.actor_id == actor_id,
                web_reads.c.ticket_id.in_(ticket_ids))).scalars())
            if not read:
                if have:
                    c.execute(delete(web_reads).where(web_reads.c.actor_id == actor_id,
                                                      web_reads.c.ticket_id.in_(have)))
                return
            seen = c.execute(select(func.coalesce(func.max(events.c.seq), 0))).scalar() or 0
            if have:  # read again: what happened since the old mark is seen now
                c.execute(update(web_reads).where(
                    web_reads.c.actor_id == actor_id, web_reads.c.ticket_id.in_(have))
                    .values(read_at=at, seen_seq=seen))
            new = [i for i in ticket_ids if i not in have]
            if new:
                c.execute(insert(web_reads), [{"actor_id": actor_id, "ticket_id": i,
                                               "read_at": at, "seen_seq": seen}
                                              for i in new])

    def read_among(self, actor_id: int, ticket_ids: list[int]) -> set[int]:
        me = select(actors.c.name).where(actors.c.id == actor_id).scalar_subquery()
        newer = exists().where(events.c.ticket_id == web_reads.c.ticket_id,
                               events.c.seq > web_reads.c.seen_seq,
                               events.c.actor != me)
        stmt = select(web_reads.c.ticket_id).where(and_(
            web_reads.c.actor_id == actor_id, web_reads.c.ticket_id.in_(ticket_ids),
            ~newer))
        with self._store.read() as uow:
            return set(uow.connection.execute(stmt).scalars())


class SqlSavedViews:
    def __init__(self, store: SqlStore) -> None:
        self._store = store

    def views_of(self, actor_id: int) -> list[SavedView]:
        stmt = (select(web_saved_views.c.name, web_saved_views.c.query)
                .where(web_saved_views.c.actor_id == actor_id)
                .order_by(web_saved_views.c.name))
        with self._store.read() as uow:
            return [SavedView(r.name, r.query) for r in uow.connection.execute(stmt)]

    def put(self, actor_id: int, view: SavedView, at: datetime, limit: int) -> bool:
        mine = web_saved_views.c.actor_id == actor_id
        with self._store.write() as uow:
            c = uow.connection
            others = c.execute(select(func.count()).select_from(web_saved_views).where(
                mine, web_saved_views.c.name != view.name)).scalar() or 0
            if others >= limit:
                return False
            c.execute(delete(web_saved_views).where(mine,
                                                    web_saved_views.c.name == view.name))
            c.execute(insert(web_saved_views).values(actor_id=actor_id, name=view.name,
                                                     query=view.query, created_at=at))
            return True

    def delete(self, actor_id: int, name: str) -> None:
        with self._store.write() as uow:
            uow.connection.execute(delete(web_saved_views).where(
                web_saved_views.c.actor_id == actor_id, web_saved_views.c.name == name))
