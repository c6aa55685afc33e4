"""Every door's writes share one group commit: the event loop's doors (native API, MCP,
OpenAI, agent tools) with ``a``-prefixed commands, the Agent Protocol door's task
creates, steps and in-hub replies through ``TicketService.awrite``, the doors in worker
threads (web forms, GitHub and email answers, the conversation engine) with the plain
ones. (GitHub's comments and commands: ``tests/github/test_github_inbound.py``.)"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services.held_writes import HeldWrites
from tickethub.api.agent_protocol.context import ApServices
from tickethub.channels.email.replies import ReplyReader
from tickethub.domain.actors import Actor, Role
from tickethub.domain.messages import Message
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket, TicketDraft
from tickethub.errors import NotFound
from tickethub.mail.parse import parse_mail
from tickethub.mail.reply_token import sign
from tickethub.server.runtime import HubRuntime
from tickethub.services.agent_step_writes import PostedStep, StepInput
from tickethub.services.agent_tasks import TaskInput, TaskView
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


async def test_writes_from_threads_and_the_event_loop_commit_in_one_batch(
        hub: HubRuntime) -> None:
    """A native-API ask holds the writer; a web-form answer and an email reply (worker
    threads) and a native-API answer (event loop) then arrive and go in together."""
    one, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="one"))
    two, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="two"))
    three, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="three"))
    async with hub.running():  # the composition root binds the group commit to the loop
        held = HeldWrites(hub)
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


async def test_agent_protocol_creates_and_steps_share_a_batch_with_native_writes(
        hub: HubRuntime) -> None:
    """An AP task create, an AP step and a native answer queued behind a native ask go
    in together: one transaction, one ``INSERT`` of tickets for the ask and the create."""
    ap = ApServices.build(hub)
    task = ap.tasks.create(AGENT, "an earlier task", None)
    question, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="q"))
    async with hub.running():
        held = HeldWrites(hub)
        first = asyncio.create_task(
            hub.tickets.aask(AGENT, TicketDraft(kind=Kind.QUESTION, title="api ask")))
        await held.holding()
        create = asyncio.create_task(ap.create(TaskInput(AGENT, "a new task", {"app": "x"})))
        step = asyncio.create_task(ap.step(StepInput(AGENT, task.record.task_id, "next",
                                                     None)))
        answer = asyncio.create_task(hub.tickets.aanswer(ALICE, question.id, "yes", None,
                                                         "api"))
        await held.queued(3)
        held.release()
        _, created, posted, answered = await asyncio.gather(first, create, step, answer)
    assert held.batches[0] == ["Ask"]
    assert sorted(held.batches[1]) == ["Ask+TaskCompanion", "Change", "StepInput"]
    assert isinstance(created, TaskView) and created.ticket.title == "a new task"
    assert ap.tasks.get(created.record.task_id).ticket.refs["ap_input.app"] == "x"
    assert isinstance(posted, PostedStep) and posted.seq > 0
    assert [s.state.step_id for s in ap.tasks.steps(task.record.task_id)[1]] == [
        posted.step.step_id]
    assert answered.status is Status.ANSWERED


async def test_an_email_reply_joins_the_batch(hub: HubRuntime) -> None:
    """The hub's mailbox loop hands replies to ``ReplyReader.ahandle``: the answer is
    written in the shared group commit, with a native answer queued beside it."""
    key = b"k" * 32
    mailed, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="Ship it?"))
    other, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="other"))
    sender = "ann@example.org"
    raw = (f"From: {sender}\nTo: reply+{sign(key, mailed.id, sender)}@hub.example\n"
           "Subject: Re: Ship it?\nMessage-ID: <r1@example.org>\n\nYes, ship it.\n")
    reader = ReplyReader(hub.tickets, key=key, responders={sender: "ann"}, notify={})
    async with hub.running():
        held = HeldWrites(hub)
        first = asyncio.create_task(
            hub.tickets.aask(AGENT, TicketDraft(kind=Kind.QUESTION, title="api ask")))
        await held.holding()
        reply = asyncio.create_task(reader.ahandle(parse_mail(raw.encode())))
        await held.queued(1)
        api = asyncio.create_task(hub.tickets.aanswer(ALICE, other.id, "no", None, "api"))
        await held.queued(2)
        held.release()
        _, was_reply, _ = await asyncio.gather(first, reply, api)
    assert was_reply is True
    assert held.batches[1] == ["Change", "Change"]
    answer = hub.tickets.get(mailed.id).answer
    assert answer is not None and answer.via == "email" and answer.by == "ann"


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
