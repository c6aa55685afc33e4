"""People's agent installations: install (configuration checked against the agent's
schema), enable, disable, list, runs, and their sealed secrets."""

from __future__ import annotations

from typing import Any

from tickethub.agents.credentials import OWN_TOKEN_SECRET
from tickethub.agents.registry import AgentRegistry
from tickethub.agents.secrets import SecretBox
from tickethub.domain.agent_runs import AgentInstallation, AgentRun
from tickethub.errors import NotFound, ValidationFailed
from tickethub.services.ports import Clock
from tickethub.store.agents_store import SqlAgentStore


class AgentDirectory:
    def __init__(self, registry: AgentRegistry, store: SqlAgentStore, clock: Clock,
                 box: SecretBox) -> None:
        self.registry = registry
        self._store = store
        self._clock = clock
        self._box = box

    def install(self, owner: str, agent: str, config: dict[str, Any] | None = None,
                identities: dict[str, str] | None = None) -> AgentInstallation:
        """Install ``agent`` for ``owner`` (enabled). ``identities`` maps a channel to the
        owner's name there (``{"github": "octocat"}``)."""
        if not owner.strip():
            raise ValidationFailed("an installation needs an owner", field="owner")
        manifest = self.registry.get(agent).manifest
        config = config or {}
        manifest.check_config(config)
        return self._store.add_installation(owner, agent, config, dict(identities or {}),
                                            self._clock.now())

    def find(self, owner: str, agent: str) -> AgentInstallation:
        found = self._store.find_installation(owner, agent)
        if found is None:
            raise NotFound(f"{owner} has no agent {agent!r} installed", field="agent")
        return found

    def set_enabled(self, owner: str, agent: str, enabled: bool) -> AgentInstallation:
        return self._store.update_installation(self.find(owner, agent).id, self._clock.now(),
                                               enabled=enabled)

    def configure(self, owner: str, agent: str, config: dict[str, Any]) -> AgentInstallation:
        self.registry.get(agent).manifest.check_config(config)
        return self._store.update_installation(self.find(owner, agent).id, self._clock.now(),
                                               config=config)

    def installations(self, owner: str | None = None) -> list[AgentInstallation]:
        return self._store.installations(owner)

    def runs(self, owner: str | None = None, agent: str | None = None, limit: int = 50
             ) -> list[AgentRun]:
        if owner and agent:
            return self._store.runs(self.find(owner, agent).id, limit)
        return self._store.runs(None, limit)

    def set_secret(self, owner: str, name: str, value: str) -> None:
        """Seal ``value`` for ``owner``; only the ciphertext is stored."""
        if not name.strip() or not value:
            raise ValidationFailed("a secret needs a name and a value", field="name")
        self._store.put_secret(owner, name, self._box.seal(owner, name, value),
                               self._clock.now())

    def secret(self, owner: str, name: str) -> str:
        sealed = self._store.get_secret(owner, name)
        if sealed is None:
            raise NotFound(f"{owner} has no secret {name!r}", field="name")
        return self._box.open(owner, name, sealed)

    def open_secrets(self, owner: str) -> None:
        """Open every secret of ``owner`` so the box redacts them from what runs write."""
        for name in self._store.secret_names(owner):
            self.secret(owner, name)

    def own_github_token(self, owner: str) -> str | None:
        """The GitHub token ``owner`` sealed for their agents to use, if any."""
        sealed = self._store.get_secret(owner, OWN_TOKEN_SECRET)
        return self._box.open(owner, OWN_TOKEN_SECRET, sealed) if sealed else None
