"""The store contract, personal agents' state: installations and how events find them,
runs, sealed secrets, on the in-memory store, SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.store.conftest import REFUSED, on_store
from tickethub.domain.agent_runs import AgentRun, BudgetUse, RunStatus
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.errors import Conflict, NotFound
from tickethub.store.agents_store import SqlAgentStore
from tickethub.store.memory_agents import MemoryAgentStore

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
LATER = NOW + timedelta(minutes=5)


@pytest.fixture
def agents(store: Any) -> Any:
    return on_store(store, MemoryAgentStore, SqlAgentStore)


def test_an_installation_per_owner_and_agent(agents: Any) -> None:
    ann = agents.add_installation("ann", "summary", {"words": (80,)}, {"github": "ann-gh"},
                                  NOW)
    assert (ann.owner, ann.agent, ann.config, ann.enabled, ann.identities) == (
        "ann", "summary", {"words": [80]}, True, {"github": "ann-gh"})
    assert ann.created_at == ann.updated_at == NOW
    with pytest.raises(Conflict):
        agents.add_installation("ann", "summary", {}, {}, NOW)
    bob = agents.add_installation("bob", "summary", {}, {}, NOW)
    ann2 = agents.add_installation("ann", "rewrite", {}, {}, NOW)
    assert ann.id < bob.id < ann2.id
    assert agents.installation(bob.id) == bob
    with pytest.raises(NotFound):
        agents.installation(999_999)
    assert agents.find_installation("ann", "summary") == ann
    assert agents.find_installation("ann", "nope") is None
    assert agents.installations() == [ann, bob, ann2]
    assert agents.installations("ann") == [ann, ann2]
    assert agents.installations(agents=["summary"]) == [ann, bob]
    assert agents.installations(agents=[]) == []
    ann.config.clear()
    assert agents.installation(ann.id).config == {"words": [80]}


def test_an_installation_is_changed_and_an_unknown_one_is_not_found(agents: Any) -> None:
    ann = agents.add_installation("ann", "summary", {}, {}, NOW)
    off = agents.update_installation(ann.id, LATER, enabled=False)
    assert (off.enabled, off.updated_at, off.created_at) == (False, LATER, NOW)
    assert agents.installations(enabled_only=True) == []
    assert agents.installations() == [off]
    configured = agents.update_installation(ann.id, LATER, config={"words": 5},
                                            identities={"chat": "@ann"})
    assert (configured.config, configured.identities) == ({"words": 5}, {"chat": "@ann"})
    with pytest.raises(NotFound):
        agents.update_installation(999_999, LATER, enabled=True)


def test_routing_finds_every_and_the_named_owners_enabled_installations(agents: Any
                                                                          ) -> None:
    for n in range(4):
        agents.add_installation(f"p{n}", "rewrite", {}, {"github": f"gh{n}",
                                                         "chat": f"@p{n}"}, NOW)
        agents.add_installation(f"p{n}", "summary", {}, {"github": f"gh{n}"}, NOW)
    agents.add_installation("p9", "rewrite", {}, {"github": ""}, NOW)  # no name there
    off = agents.find_installation("p3", "rewrite")
    agents.update_installation(off.id, NOW, enabled=False)

    def owners(every: list[str], named: list[str], source: str, names: list[str],
               owner: str | None = None) -> list[tuple[str, str]]:
        return [(i.owner, i.agent) for i in agents.routing_installations(
            owner, every, named, source, names)]

    assert owners([], ["rewrite"], "github", ["stranger", ""]) == []
    assert owners([], ["rewrite"], "github", ["gh1"]) == [("p1", "rewrite")]
    assert owners([], ["rewrite"], "chat", ["gh1"]) == []  # another channel's name
    assert owners([], ["rewrite"], "github", ["gh3"]) == []  # disabled
    assert owners(["summary"], ["rewrite"], "github", ["gh2"]) == [  # in id order
        ("p0", "summary"), ("p1", "summary"), ("p2", "rewrite"), ("p2", "summary"),
        ("p3", "summary")]
    assert owners(["summary"], [], "github", [], owner="p2") == [("p2", "summary")]
    assert owners([], [], "github", ["gh1"]) == []
    moved = agents.find_installation("p1", "rewrite")
    agents.update_installation(moved.id, NOW, identities={"github": "new1"})
    assert owners([], ["rewrite"], "github", ["gh1"]) == []
    assert owners([], ["rewrite"], "github", ["new1"]) == [("p1", "rewrite")]


def test_runs_start_finish_and_are_listed_newest_first(agents: Any, store: Any) -> None:
    ann = agents.add_installation("ann", "summary", {}, {}, NOW)
    bob = agents.add_installation("bob", "summary", {}, {}, NOW)
    first = agents.start_run(ann.id, "github:" + "x" * 200, NOW)
    assert first == AgentRun(first.id, ann.id, None, ("github:" + "x" * 200)[:120],
                             RunStatus.RUNNING, NOW)
    other = agents.start_run(bob.id, "schedule", NOW)
    second = agents.start_run(ann.id, "chat:mention", NOW)
    with store.write() as uow:
        [ticket] = uow.tickets.add_many([(TicketDraft(Kind.INFO, "run log"), "ann")], NOW)
    agents.set_run_ticket(second.id, ticket.id)
    used = BudgetUse(2, 300, 1, 1.5, 0.25)
    done = agents.finish_run(second.id, RunStatus.STOPPED, used, "budget spent", LATER)
    assert done == AgentRun(second.id, ann.id, ticket.id, "chat:mention", RunStatus.STOPPED,
                            NOW, LATER, used, "budget spent")
    assert agents.run(second.id) == done
    with pytest.raises(NotFound):
        agents.run(999_999)
    assert agents.runs() == [done, other, first]
    assert agents.runs(ann.id) == [done, first]
    assert agents.runs(ann.id, limit=1) == [done]
    assert agents.runs(999_999) == []
    with pytest.raises(REFUSED):
        agents.start_run(999_999, "x", NOW)  # no such installation
    with pytest.raises(REFUSED):
        agents.set_run_ticket(first.id, 999_999)  # no such ticket
    assert agents.run(first.id).ticket_id is None


def test_sealed_secrets_per_owner_and_name(agents: Any) -> None:
    assert agents.get_secret("ann", "token") is None
    agents.put_secret("ann", "token", b"\x00sealed-1", NOW)
    agents.put_secret("ann", "api", b"sealed-2", NOW)
    agents.put_secret("bob", "token", b"bob's", NOW)
    agents.put_secret("ann", "token", b"sealed-3", LATER)  # replaced
    assert agents.get_secret("ann", "token") == b"sealed-3"
    assert agents.secret_names("ann") == ["api", "token"]
    assert agents.secret_names("nobody") == []


def test_what_a_batch_wrote_is_gone_when_it_raises(agents: Any, store: Any) -> None:
    with pytest.raises(RuntimeError), store.batch():
        ann = agents.add_installation("ann", "summary", {}, {"github": "ann"}, NOW)
        agents.start_run(ann.id, "x", NOW)
        agents.put_secret("ann", "token", b"s", NOW)
        assert agents.installations("ann") == [ann]  # the batch sees its own writes
        raise RuntimeError("the batch failed")
    assert agents.installations() == [] and agents.runs() == []
    assert agents.get_secret("ann", "token") is None
    assert agents.routing_installations(None, [], ["summary"], "github", ["ann"]) == []
    agents.add_installation("ann", "summary", {}, {}, NOW)  # free again
