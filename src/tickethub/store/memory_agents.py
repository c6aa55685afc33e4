"""Personal agents' state in memory: installations, runs and sealed secrets over a
``MemoryStore``, with ``store/agents_store.py``'s contracts
(``tests/store/test_store_contract_agents.py`` runs on every store).

Tables: ``agent_installations`` (id → installation; one per owner and agent),
``agent_runs`` (id → run) and ``agent_secrets`` ((owner, name) → sealed bytes). An
installation's identities are read from the installation itself: SQL's
``agent_identities`` rows are an index of the same, kept without empty names."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from tickethub.domain.agent_runs import AgentInstallation, AgentRun, BudgetUse, RunStatus
from tickethub.errors import Conflict, NotFound
from tickethub.store.memory_state import ConstraintViolation, as_json, as_utc
from tickethub.store.memory_store import MemoryStore


def _install(found: AgentInstallation) -> AgentInstallation:
    return replace(found, config=as_json(found.config), identities=as_json(found.identities))


class MemoryAgentStore:
    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        state = store.state
        self._installs: dict[int, AgentInstallation] = state.table("agent_installations")
        self._runs: dict[int, AgentRun] = state.table("agent_runs")
        self._secrets: dict[tuple[str, str], bytes] = state.table("agent_secrets")

    # -- installations --------------------------------------------------------------------

    def add_installation(self, owner: str, agent: str, config: dict[str, Any],
                         identities: dict[str, str], now: datetime) -> AgentInstallation:
        with self._store.transaction() as changes:
            if self._find(owner, agent) is not None:
                raise Conflict(f"{owner} already has {agent} installed", field="agent")
            [new_id] = self._store.state.next_ids("agent_installations", 1)
            changes.put(self._installs, new_id, AgentInstallation(
                new_id, owner, agent, as_json(config), True, as_json(identities),
                as_utc(now), as_utc(now)))
            return _install(self._installs[new_id])

    def _find(self, owner: str, agent: str) -> AgentInstallation | None:
        return next((i for i in self._installs.values()
                     if i.owner == owner and i.agent == agent), None)

    def installation(self, installation_id: int) -> AgentInstallation:
        with self._store.transaction():
            found = self._installs.get(installation_id)
            if found is None:
                raise NotFound(f"no agent installation {installation_id}",
                               field="installation")
            return _install(found)

    def find_installation(self, owner: str, agent: str) -> AgentInstallation | None:
        with self._store.transaction():
            found = self._find(owner, agent)
            return None if found is None else _install(found)

    def installations(self, owner: str | None = None, enabled_only: bool = False,
                      agents: list[str] | None = None) -> list[AgentInstallation]:
        with self._store.transaction():
            return [_install(i) for i in self._installs.values()
                    if (agents is None or i.agent in agents)
                    and (owner is None or i.owner == owner)
                    and (i.enabled or not enabled_only)]

    def routing_installations(self, owner: str | None, every: list[str],
                              by_identity: list[str], source: str, names: list[str]
                              ) -> list[AgentInstallation]:
        """``SqlAgentStore.routing_installations``: all enabled installations of the
        agents in ``every``, and of those in ``by_identity`` the ones whose owner is
        ``names`` on ``source``."""
        def wanted(i: AgentInstallation) -> bool:
            named = i.identities.get(source)
            return i.agent in every or (i.agent in by_identity and bool(named)
                                        and named in names)

        with self._store.transaction():
            return [_install(i) for i in self._installs.values()
                    if i.enabled and (owner is None or i.owner == owner) and wanted(i)]

    def update_installation(self, installation_id: int, now: datetime, **fields: Any
                            ) -> AgentInstallation:
        with self._store.transaction() as changes:
            found = self._installs.get(installation_id)
            if found is None:
                raise NotFound(f"no agent installation {installation_id}",
                               field="installation")
            unknown = set(fields) - {"config", "identities", "enabled", "owner", "agent"}
            if unknown:
                raise ConstraintViolation(f"no columns {sorted(unknown)}")
            stored = {k: as_json(v) if k in ("config", "identities") else v
                      for k, v in fields.items()}
            changed = replace(found, updated_at=as_utc(now), **stored)
            if any(i.owner == changed.owner and i.agent == changed.agent
                   and i.id != installation_id for i in self._installs.values()):
                raise ConstraintViolation(f"{changed.owner} already has {changed.agent}")
            changes.put(self._installs, installation_id, changed)
            return _install(changed)

    # -- runs ------------------------------------------------------------------------------

    def start_run(self, installation_id: int, trigger: str, now: datetime) -> AgentRun:
        with self._store.transaction() as changes:
            if installation_id not in self._installs:
                raise ConstraintViolation(f"no agent installation {installation_id}")
            [new_id] = self._store.state.next_ids("agent_runs", 1)
            run = AgentRun(new_id, installation_id, None, trigger[:120], RunStatus.RUNNING,
                           as_utc(now))
            changes.put(self._runs, new_id, run)
            return run

    def set_run_ticket(self, run_id: int, ticket_id: int) -> None:
        with self._store.transaction() as changes:
            found = self._runs.get(run_id)
            if found is None:
                return
            if ticket_id not in self._store.state.tickets:
                raise ConstraintViolation(f"no ticket {ticket_id} for a run")
            changes.put(self._runs, run_id, replace(found, ticket_id=ticket_id))

    def finish_run(self, run_id: int, status: RunStatus, used: BudgetUse,
                   error: str | None, now: datetime) -> AgentRun:
        with self._store.transaction() as changes:
            found = self._runs.get(run_id)
            if found is not None:
                changes.put(self._runs, run_id, replace(
                    found, status=status, used=used, error=error, finished_at=as_utc(now)))
        return self.run(run_id)

    def run(self, run_id: int) -> AgentRun:
        with self._store.transaction():
            found = self._runs.get(run_id)
        if found is None:
            raise NotFound(f"no agent run {run_id}", field="run")
        return found

    def runs(self, installation_id: int | None = None, limit: int = 50) -> list[AgentRun]:
        with self._store.transaction():
            newest = [r for r in reversed(self._runs.values())
                      if installation_id is None or r.installation_id == installation_id]
            return newest[:limit]

    # -- sealed secrets --------------------------------------------------------------------

    def put_secret(self, owner: str, name: str, sealed: bytes, now: datetime) -> None:
        with self._store.transaction() as changes:
            changes.put(self._secrets, (owner, name), bytes(sealed))

    def get_secret(self, owner: str, name: str) -> bytes | None:
        with self._store.transaction():
            return self._secrets.get((owner, name))

    def secret_names(self, owner: str) -> list[str]:
        with self._store.transaction():
            return sorted(name for who, name in self._secrets if who == owner)
