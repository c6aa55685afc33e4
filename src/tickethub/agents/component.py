"""Personal agents as a hub component (:data:`component`, on with ``agents_enabled``):
``install(hub)`` builds the registry, the directory and the kernel, and hooks the kernel
to the GitHub channel when it is on (installed before, so it is ``provided``)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from tickethub.agents import github_hook
from tickethub.agents.credentials import GithubCredentials
from tickethub.agents.directory import AgentDirectory
from tickethub.agents.kernel import Kernel
from tickethub.agents.registry import default_registry
from tickethub.agents.runners.actions import ActionsRunner
from tickethub.agents.schedules import ScheduleLoop
from tickethub.agents.secrets import SecretBox, load_key
from tickethub.agents.tasks import LinkedTasks
from tickethub.domain.agent_runs import AgentInstallation
from tickethub.llm.port import LLM
from tickethub.services.host import Component, Host
from tickethub.store.agents_store import SqlAgentStore
from tickethub.store.sessions_store import SqlSessionStore


@dataclass
class PersonalAgents:
    directory: AgentDirectory
    kernel: Kernel
    box: SecretBox


def install(hub: Host, llm: LLM | None = None, *, loops: bool = False
            ) -> PersonalAgents:
    """Build personal agents on ``hub``; ``llm`` overrides the configured model (tests
    pass a ``ScriptedLLM``); ``loops`` adds the schedule loop to the hub's loops."""
    s = hub.settings
    registry = default_registry(s.agents_plugins)
    configured = s.agents_secret_key.get_secret_value() if s.agents_secret_key else None
    if configured:
        load_key(s.data_dir, configured)  # a malformed key fails at start, naming it
    # The key file is made on the first seal or open, not at every start.
    box = SecretBox(lambda: load_key(s.data_dir, configured))
    store = SqlAgentStore(hub.store)
    model = llm if llm is not None else _configured_llm(hub)

    def llm_for(install: AgentInstallation) -> LLM | None:
        return model

    directory = AgentDirectory(registry, store, hub.clock, box)
    kernel = Kernel(registry, store, hub.tickets, hub.bus, hub.clock, llm_for, box,
                    directory.open_secrets)
    kernel.tasks = LinkedTasks(hub.tickets, SqlSessionStore(hub.store).get_actor)
    # Without the GitHub channel nothing can be dispatched; the doors still answer.
    kernel.actions = ActionsRunner(s.effective_public_url, None)
    agents = PersonalAgents(directory, kernel, box)
    hub.provide("agents", agents)
    if loops:
        hub.add_loop(ScheduleLoop(kernel, store, hub.tickets, hub.clock).run)
    if hub.provided("github") is not None:
        attach_github(agents, hub)
    return agents


def attach_github(agents: PersonalAgents, hub: Host,
                  transport: httpx.AsyncBaseTransport | None = None) -> None:
    """Hook the kernel to the hub's GitHub channel (``transport``: tests' fake GitHub)."""
    github = hub.provided("github")
    s = hub.settings
    app = None
    if s.github_app_id and s.github_app_private_key and s.github_app_installation_id:
        app = (s.github_app_id, s.github_app_private_key.get_secret_value(),
               s.github_app_installation_id)
    credentials = GithubCredentials(github.gateway, api_url=s.github_api_url,
                                    own_token=agents.directory.own_github_token, app=app,
                                    transport=transport)
    github_hook.attach(agents.kernel, github.inbound, github.gateway, credentials)
    sync = github.sync
    if agents.kernel.tasks is not None:
        agents.kernel.tasks.github_link = lambda repo, number: (
            link.ticket_id if (link := sync.link_by_number(repo, number)) else None)
    agents.kernel.actions = ActionsRunner(s.effective_public_url, credentials.dispatcher)


def _configured_llm(hub: Host) -> LLM | None:
    s = hub.settings
    base_url = s.agents_llm_base_url or s.upstream_base_url
    if not base_url:
        return None
    from tickethub.llm.openai_compatible import OpenAICompatible

    key = s.agents_llm_api_key or s.upstream_api_key
    return OpenAICompatible(base_url, key.get_secret_value() if key else None,
                            model=s.agents_llm_model)


component = Component("agents", lambda settings: settings.agents_enabled,
                      lambda host: install(host, loops=True))
