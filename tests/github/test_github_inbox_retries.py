"""The webhook inbox when things fail: a delivery that keeps failing waits its own turn
(persisted, so a restart keeps it) instead of holding up the deliveries behind it; an
answer outlasts a GitHub outage of hours and is applied when GitHub is back; a delivery
that finally fails is told to its commenter on the issue.

Driven with a fake clock and single worker rounds, so nothing sleeps and nothing is
timed: attempts are counted on the fake GitHub and read from the stored inbox."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest
from gh_fake import FakeGitHub
from gh_helpers import REPO, comment_payload

from tickethub.channels.github import GithubChannel, install
from tickethub.channels.worker import DeliveryWorker
from tickethub.domain.actors import Actor, Role
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.server.runtime import HubRuntime
from tickethub.services.github_sync import RetrySchedule
from tickethub.settings import Settings
from tickethub.testing import FakeClock

AGENT = Actor("agent-1", Role.AGENT)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # the shipped back-off (the shared fixture shortens it for the tests that sleep)
    return settings.model_copy(update={"github_backoff_seconds": 1.0})


@pytest.fixture
def runtime(settings: Settings, clock: FakeClock) -> Iterator[HubRuntime]:
    hub = HubRuntime(settings, clock=clock)
    # the mirror's first round starts at the end of the log: take it before any ticket
    hub.deliveries.enqueue_new("github", lambda event: [])
    yield hub
    hub.close()


async def _mirror_round(runtime: HubRuntime, github: GithubChannel) -> None:
    await DeliveryWorker(github.mirror, runtime.deliveries, runtime.bus, 1.0).run_once()


async def _mirrored(runtime: HubRuntime, github: GithubChannel, title: str
                    ) -> tuple[int, int]:
    ticket, _ = runtime.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title=title,
                                                       labels=("github",)))
    await _mirror_round(runtime, github)
    link = github.sync.link(ticket.id)
    assert link is not None
    return ticket.id, link.number


def _receive(github: GithubChannel, delivery: str, number: int, login: str, body: str,
             comment_id: int) -> None:
    """What ``/hooks/github`` does with a good delivery: store it in the inbox."""
    payload = comment_payload("created", REPO, number, comment_id, login, body)
    assert github.sync.receive(delivery, "issue_comment", json.dumps(payload)) is not None


async def _next_turn(github: GithubChannel, clock: FakeClock, delivery: str) -> timedelta:
    """Move the clock to the delivery's next attempt and run one round; the wait."""
    item = github.sync.inbox_item(delivery)
    assert item is not None and item.status == "pending" and item.next_attempt_at
    wait = item.next_attempt_at - clock.now()
    clock.advance(seconds=wait.total_seconds())
    await github.intake.run_once()
    return wait


async def test_a_poison_delivery_waits_its_own_turn_and_holds_up_no_other(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub, connect,
        clock: FakeClock) -> None:
    connect()
    fake.grant(REPO, "maintainer", "write")
    _, poisoned = await _mirrored(runtime, github, "poisoned")
    healthy, number = await _mirrored(runtime, github, "healthy")
    fake.fail_always("GET", r"/collaborators/poison/permission$", 502)

    def lookups() -> int:
        return len(fake.calls("GET", "/collaborators/poison/permission"))

    _receive(github, "poison", poisoned, "poison", "/answer 1", comment_id=1)
    _receive(github, "good", number, "maintainer", "/answer 2", comment_id=2)
    assert await github.intake.run_once() == 2
    assert lookups() == 1  # one try, no retries in line holding the worker
    assert github.intake.outcomes == {"good": "answered"}
    assert runtime.tickets.get(healthy).answer.text == "2"
    item = github.sync.inbox_item("poison")
    assert (item.status, item.attempts) == ("pending", 1)
    assert item.next_attempt_at == clock.now() + timedelta(seconds=1)

    # A later delivery goes first while the poison is not due, also after a restart:
    # the poison's turn is stored, not kept in the worker's memory.
    restarted = install(runtime, token="ghp_test", register=False,
                        transport=httpx.MockTransport(fake.handler))
    _receive(github, "later", number, "maintainer", "thanks!", comment_id=3)
    assert await restarted.intake.run_once() == 1
    assert restarted.intake.outcomes == {"later": "message"}
    assert lookups() == 1

    # Its own turns: just before one nothing happens, at it exactly one lookup.
    waits = []
    for tries in range(2, 6):
        due = github.sync.inbox_item("poison").next_attempt_at
        waits.append(due - clock.now())
        clock.advance(seconds=(due - clock.now()).total_seconds() - 0.5)
        await restarted.intake.run_once()
        assert lookups() == tries - 1
        clock.advance(seconds=0.5)
        await restarted.intake.run_once()
        assert lookups() == tries
    assert waits == [timedelta(seconds=s) for s in (1, 2, 4, 8)]


async def test_an_answer_outlasts_a_long_outage_and_lands_when_github_is_back(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub, connect,
        clock: FakeClock) -> None:
    connect()
    fake.grant(REPO, "maintainer", "write")
    ticket_id, number = await _mirrored(runtime, github, "Which port?")
    fake.outage = 503
    start = clock.now()
    _receive(github, "answer", number, "maintainer", "/answer 8080", comment_id=10)
    await github.intake.run_once()
    waits = []
    while clock.now() - start < timedelta(hours=3):  # the old inbox gave up after ~20 s
        waits.append(await _next_turn(github, clock, "answer"))
    item = github.sync.inbox_item("answer")
    assert item.status == "pending"
    assert runtime.tickets.get(ticket_id).status == "open"
    # exponential back-off, capped: a few dozen tries in three hours, not thousands
    assert waits == sorted(waits)
    assert waits[-1] == timedelta(seconds=300)
    assert 10 < item.attempts < 3 * 3600 / 300 + 12

    fake.heal()
    await _next_turn(github, clock, "answer")
    assert github.intake.outcomes["answer"] == "answered"
    ticket = runtime.tickets.get(ticket_id)
    assert ticket.status == "answered" and ticket.answer.text == "8080"
    assert github.sync.inbox_item("answer").status == "done"


@pytest.mark.parametrize("window_hours", [2.0])
async def test_a_delivery_that_finally_fails_is_told_to_the_commenter(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub, connect,
        clock: FakeClock, window_hours: float) -> None:
    github.sync.inbox_retry = RetrySchedule(1.0, 300.0, window_hours * 3600)
    connect()
    fake.grant(REPO, "maintainer", "write")
    ticket_id, number = await _mirrored(runtime, github, "Which port?")
    fake.outage = 502
    start = clock.now()
    _receive(github, "lost", number, "maintainer", "/answer 8080", comment_id=20)
    await github.intake.run_once()
    for _ in range(200):
        if github.sync.inbox_item("lost").status != "pending":
            break
        await _next_turn(github, clock, "lost")
    assert github.sync.inbox_item("lost").status == "failed"
    assert clock.now() - start == timedelta(hours=window_hours)  # the last try: at the end
    ticket = runtime.tickets.get(ticket_id)
    assert ticket.status == "open" and ticket.answer is None
    notes = [m for m in runtime.tickets.messages(ticket_id) if "@maintainer" in m.body]
    assert len(notes) == 1

    fake.heal()  # the note reaches GitHub through the mirror's durable queue
    await _mirror_round(runtime, github)
    told = [c for c in fake.issue_comments(REPO, number) if "@maintainer" in c["body"]]
    assert len(told) == 1
    assert "could not be processed" in told[0]["body"]
    assert "issuecomment-20" in told[0]["body"]  # a link to the comment that was lost
    await github.intake.run_once()  # nothing is tried again
    assert github.sync.inbox_item("lost").status == "failed"


def test_the_retry_schedule_doubles_is_capped_and_ends_with_its_window() -> None:
    schedule = RetrySchedule(first=1.0, longest=300.0, window=24 * 3600)
    waits = [schedule.wait(attempts) for attempts in range(1, 12)]
    assert waits[:4] == [1.0, 2.0, 4.0, 8.0]
    assert max(waits) == 300.0 and schedule.wait(10_000) == 300.0
    assert schedule.wait(3, retry_after=3600.0) == 3600.0  # GitHub's own wish wins
    # tries over the whole window: bounded (about one every five minutes at most)
    assert 280 < schedule.tries() < 300
