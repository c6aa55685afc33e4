"""Every door's ticket writes share one group commit: the event loop's doors (native API,
MCP, OpenAI, agent tools) with ``a``-prefixed commands, the doors in worker threads (web
forms, GitHub and email answers, mail, the conversation engine) with the plain ones."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tickethub.domain.actors import Actor, Role
from tickethub.domain.messages import Message
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket, TicketDraft
from tickethub.errors import NotFound
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings
from tickethub.testing import FakeClock

AGENT = Actor("bot", Role.AGENT)
ALICE = Actor("alice", Role.RESPONDER)


@pytest.fixture
def hub(tmp_path: Path, database_url: str) -> Iterator[HubRuntime]:
    runtime = HubRuntime(Settings(data_dir=tmp_path, database_url=database_url),
                         clock=FakeClock(), components=[])
    yield runtime
    runtime.close()


class _Held:
    """Wraps the group commit's commit function: records each batch's item kinds, and
    holds the first transaction open until ``release`` so others queue behind it."""

    def __init__(self, hub: HubRuntime) -> None:
        grouped = hub.tickets._grouped
        self._commit = grouped._commit
        self.batches: list[list[str]] = []
        self._entered = threading.Event()
        self._gate = threading.Event()
        grouped._commit = self  # type: ignore[assignment]
        self._grouped = grouped

    def __call__(self, items: Sequence[Any]) -> Any:
        if not self.batches:
            self._entered.set()
            self._gate.wait(10)
        self.batches.append([type(item).__name__ for item in items])
        return self._commit(items)

    def release(self) -> None:
        self._gate.set()

    async def holding(self) -> None:
        await _until(self._entered.is_set, "the first transaction never started")

    async def queued(self, n: int) -> None:
        await _until(lambda: len(self._grouped._queue) >= n,
                     f"fewer than {n} writes joined the queue")


async def _until(condition: Callable[[], bool], failure: str) -> None:
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(failure)


async def test_writes_from_threads_and_the_event_loop_commit_in_one_batch(
        hub: HubRuntime) -> None:
    """A native-API ask holds the writer; a web-form answer and an email reply (worker
    threads) and a native-API answer (event loop) then arrive and go in together."""
    one, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="one"))
    two, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="two"))
    three, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="three"))
    async with hub.running():  # the composition root binds the group commit to the loop
        held = _Held(hub)
        first = asyncio.create_task(
            hub.tickets.aask(AGENT, TicketDraft(kind=Kind.QUESTION, title="api ask")))
        await held.holding()
        web = asyncio.create_task(asyncio.to_thread(
            hub.tickets.answer, ALICE, one.id, "from the web form", None, "web"))
        mail = asyncio.create_task(asyncio.to_thread(
            hub.tickets.post_message, ALICE, two.id, "a reply by mail", "email",
            external_id="<m1@example.org>"))
        await held.queued(2)
        api = asyncio.create_task(
            hub.tickets.aanswer(ALICE, three.id, "from the api", None, "api"))
        await held.queued(3)
        held.release()
        asked, answered, posted, api_answered = await asyncio.gather(first, web, mail, api)
    assert held.batches[0] == ["Ask"]
    assert sorted(held.batches[1]) == ["Change", "Change", "Post"]
    assert asked[0].title == "api ask"
    assert isinstance(answered, Ticket) and answered.status is Status.ANSWERED
    assert isinstance(posted, Message) and posted.via == "email"
    assert isinstance(api_answered, Ticket) and api_answered.answer is not None
    assert hub.tickets.get(one.id).answer.text == "from the web form"  # type: ignore[union-attr]


async def test_a_threads_error_is_raised_in_that_thread_only(hub: HubRuntime) -> None:
    ticket, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="q"))
    async with hub.running():
        results = await asyncio.gather(
            asyncio.to_thread(hub.tickets.answer, ALICE, 999_999, "no such", None, "web"),
            asyncio.to_thread(hub.tickets.answer, ALICE, ticket.id, "yes", None, "web"),
            return_exceptions=True)
    assert isinstance(results[0], NotFound)
    assert isinstance(results[1], Ticket) and results[1].status is Status.ANSWERED


def test_without_a_running_hub_a_thread_writes_alone(hub: HubRuntime) -> None:
    """The CLI's local mode and scripts: no event loop is bound; the write is its own
    transaction, in the caller's thread."""
    ticket, created = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="q"))
    assert created and not hub.tickets._grouped._draining
    assert hub.tickets.answer(ALICE, ticket.id, "yes", None, "cli").status is Status.ANSWERED


async def test_a_plain_command_on_the_event_loops_thread_writes_alone(hub: HubRuntime
                                                                     ) -> None:
    """Waiting on the queue from the loop's own thread could never end: it writes alone."""
    async with hub.running():
        ticket, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="q"))
        assert hub.tickets.get(ticket.id).title == "q"


async def test_the_hub_unbinds_when_it_stops(hub: HubRuntime) -> None:
    async with hub.running():
        pass
    done = threading.Event()

    def write() -> None:
        hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="after"))
        done.set()

    thread = threading.Thread(target=write)
    thread.start()
    thread.join(10)
    assert done.is_set()
