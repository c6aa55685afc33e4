"""Personal agents' tables and their SQL store (migration ``0011_personal_agents``):
installations, runs, and the owners' sealed secrets (ciphertext only; the key is not in
the database)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    UniqueConstraint,
    and_,
    delete,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.elements import ColumnElement

from tickethub.domain.agent_runs import AgentInstallation, AgentRun, BudgetUse, RunStatus
from tickethub.errors import Conflict, NotFound
from tickethub.store.bulk import inserted_id
from tickethub.store.sql_store import SqlStore
from tickethub.store.tables import metadata
from tickethub.store.types import UTCDateTime

agent_installations = Table(
    "agent_installations", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("owner", String(100), nullable=False),
    Column("agent", String(50), nullable=False),
    Column("config", JSON, nullable=False),
    Column("identities", JSON, nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    UniqueConstraint("owner", "agent", name="uq_agent_installations_owner_agent"),
    Index("ix_agent_installations_agent", "agent"),  # routing reads by agent
)

# One row per (installation, channel): the owner's name there. Routing a command or a
# mention reads only the installations whose owner wrote or was named (migration 0013).
agent_identities = Table(
    "agent_identities", metadata,
    Column("installation_id", Integer, ForeignKey("agent_installations.id"),
           primary_key=True),
    Column("source", String(40), primary_key=True),
    Column("name", String(200), nullable=False),
    Index("ix_agent_identities_source_name", "source", "name"),
)

agent_runs = Table(
    "agent_runs", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("installation_id", Integer, ForeignKey("agent_installations.id"), nullable=False),
    Column("ticket_id", Integer, ForeignKey("tickets.id"), nullable=True),
    Column("trigger", String(120), nullable=False),
    Column("status", String(12), nullable=False),
    Column("llm_calls", Integer, nullable=False),
    Column("tokens", Integer, nullable=False),
    Column("tool_calls", Integer, nullable=False),
    Column("seconds", Float, nullable=False),
    Column("cost", Float, nullable=False),
    Column("error", Text, nullable=True),
    Column("started_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime, nullable=True),
    Index("ix_agent_runs_installation", "installation_id", "id"),
)

agent_secrets = Table(
    "agent_secrets", metadata,
    Column("owner", String(100), primary_key=True),
    Column("name", String(100), primary_key=True),
    Column("sealed", LargeBinary, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)


def _install(row: Any) -> AgentInstallation:
    return AgentInstallation(row.id, row.owner, row.agent, dict(row.config or {}),
                             bool(row.enabled), dict(row.identities or {}),
                             row.created_at, row.updated_at)


def _run(row: Any) -> AgentRun:
    return AgentRun(row.id, row.installation_id, row.ticket_id, row.trigger,
                    RunStatus(row.status), row.started_at, row.finished_at,
                    BudgetUse(row.llm_calls, row.tokens, row.tool_calls, row.seconds,
                              row.cost), row.error)


def _save_identities(connection: Any, installation_id: int,
                     identities: dict[str, str]) -> None:
    connection.execute(delete(agent_identities).where(
        agent_identities.c.installation_id == installation_id))
    rows = [{"installation_id": installation_id, "source": source, "name": name}
            for source, name in identities.items() if name]
    if rows:
        connection.execute(insert(agent_identities), rows)


class SqlAgentStore:
    def __init__(self, store: SqlStore) -> None:
        self._store = store

    # -- installations --------------------------------------------------------------------

    def add_installation(self, owner: str, agent: str, config: dict[str, Any],
                         identities: dict[str, str], now: datetime) -> AgentInstallation:
        try:
            with self._store.write() as uow:
                new_id = inserted_id(uow.connection.execute(insert(agent_installations).values(
                    owner=owner, agent=agent, config=config, identities=identities,
                    enabled=True, created_at=now, updated_at=now)))
                _save_identities(uow.connection, new_id, identities)
        except IntegrityError:
            raise Conflict(f"{owner} already has {agent} installed", field="agent") from None
        return self.installation(new_id)

    def installation(self, installation_id: int) -> AgentInstallation:
        with self._store.read() as uow:
            row = uow.connection.execute(select(agent_installations).where(
                agent_installations.c.id == installation_id)).first()
        if row is None:
            raise NotFound(f"no agent installation {installation_id}", field="installation")
        return _install(row)

    def find_installation(self, owner: str, agent: str) -> AgentInstallation | None:
        with self._store.read() as uow:
            row = uow.connection.execute(select(agent_installations).where(
                agent_installations.c.owner == owner,
                agent_installations.c.agent == agent)).first()
        return _install(row) if row is not None else None

    def installations(self, owner: str | None = None, enabled_only: bool = False,
                      agents: list[str] | None = None) -> list[AgentInstallation]:
        query = select(agent_installations).order_by(agent_installations.c.id)
        if agents is not None:
            query = query.where(agent_installations.c.agent.in_(agents))
        if owner is not None:
            query = query.where(agent_installations.c.owner == owner)
        if enabled_only:
            query = query.where(agent_installations.c.enabled.is_(True))
        with self._store.read() as uow:
            return [_install(r) for r in uow.connection.execute(query)]

    def routing_installations(self, owner: str | None, every: list[str],
                              by_identity: list[str], source: str, names: list[str]
                              ) -> list[AgentInstallation]:
        """The enabled installations an event may trigger: all of the agents in
        ``every`` (event and schedule triggers fire for anyone), and of the agents in
        ``by_identity`` (commands, mentions) only those whose owner's identity on
        ``source`` is one of ``names`` — an indexed read, so a stranger's command costs
        no more than one lookup however many people installed the agent."""
        c = agent_installations.c
        wanted: list[ColumnElement[bool]] = []
        if every:
            wanted.append(c.agent.in_(every))
        if by_identity and names:
            named = select(agent_identities.c.installation_id).where(
                agent_identities.c.source == source, agent_identities.c.name.in_(names))
            wanted.append(and_(c.agent.in_(by_identity), c.id.in_(named)))
        if not wanted:
            return []
        query = select(agent_installations).where(or_(*wanted), c.enabled.is_(True))
        if owner is not None:
            query = query.where(c.owner == owner)
        with self._store.read() as uow:
            return [_install(r) for r in uow.connection.execute(query.order_by(c.id))]

    def update_installation(self, installation_id: int, now: datetime, **fields: Any
                            ) -> AgentInstallation:
        with self._store.write() as uow:
            done = uow.connection.execute(update(agent_installations).where(
                agent_installations.c.id == installation_id).values(updated_at=now,
                                                                    **fields)).rowcount
            if done and "identities" in fields:
                _save_identities(uow.connection, installation_id, fields["identities"])
        if not done:
            raise NotFound(f"no agent installation {installation_id}", field="installation")
        return self.installation(installation_id)

    # -- runs ------------------------------------------------------------------------------

    def start_run(self, installation_id: int, trigger: str, now: datetime) -> AgentRun:
        with self._store.write() as uow:
            new_id = inserted_id(uow.connection.execute(insert(agent_runs).values(
                installation_id=installation_id, trigger=trigger[:120],
                status=RunStatus.RUNNING.value, llm_calls=0, tokens=0, tool_calls=0,
                seconds=0.0, cost=0.0, started_at=now)))
        return self.run(new_id)

    def set_run_ticket(self, run_id: int, ticket_id: int) -> None:
        with self._store.write() as uow:
            uow.connection.execute(update(agent_runs).where(agent_runs.c.id == run_id)
                                   .values(ticket_id=ticket_id))

    def finish_run(self, run_id: int, status: RunStatus, used: BudgetUse,
                   error: str | None, now: datetime) -> AgentRun:
        with self._store.write() as uow:
            uow.connection.execute(update(agent_runs).where(agent_runs.c.id == run_id).values(
                status=status.value, llm_calls=used.llm_calls, tokens=used.tokens,
                tool_calls=used.tool_calls, seconds=used.seconds, cost=used.cost,
                error=error, finished_at=now))
        return self.run(run_id)

    def run(self, run_id: int) -> AgentRun:
        with self._store.read() as uow:
            row = uow.connection.execute(select(agent_runs).where(
                agent_runs.c.id == run_id)).first()
        if row is None:
            raise NotFound(f"no agent run {run_id}", field="run")
        return _run(row)

    def runs(self, installation_id: int | None = None, limit: int = 50) -> list[AgentRun]:
        query = select(agent_runs).order_by(agent_runs.c.id.desc()).limit(limit)
        if installation_id is not None:
            query = query.where(agent_runs.c.installation_id == installation_id)
        with self._store.read() as uow:
            return [_run(r) for r in uow.connection.execute(query)]

    # -- sealed secrets --------------------------------------------------------------------

    def put_secret(self, owner: str, name: str, sealed: bytes, now: datetime) -> None:
        with self._store.write() as uow:
            done = uow.connection.execute(update(agent_secrets).where(
                agent_secrets.c.owner == owner, agent_secrets.c.name == name).values(
                sealed=sealed, updated_at=now)).rowcount
            if not done:
                uow.connection.execute(insert(agent_secrets).values(
                    owner=owner, name=name, sealed=sealed, updated_at=now))

    def get_secret(self, owner: str, name: str) -> bytes | None:
        with self._store.read() as uow:
            row = uow.connection.execute(select(agent_secrets.c.sealed).where(
                agent_secrets.c.owner == owner, agent_secrets.c.name == name)).first()
        return bytes(row.sealed) if row is not None else None

    def secret_names(self, owner: str) -> list[str]:
        with self._store.read() as uow:
            return [r.name for r in uow.connection.execute(
                select(agent_secrets.c.name).where(agent_secrets.c.owner == owner)
                .order_by(agent_secrets.c.name))]
