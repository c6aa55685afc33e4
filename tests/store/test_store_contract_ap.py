"""The store contract, the Agent Protocol door's records: tasks, steps and artifacts
(``ApStore``, ``ApRepository``) on the in-memory store, SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from tests.store.conftest import REFUSED, on_store
from tickethub.domain.agent_protocol import (
    AP_CHANNEL,
    ArtifactRecord,
    StepRecord,
    TaskFilter,
    TaskRecord,
    TaskTicket,
)
from tickethub.domain.messages import MessageDraft, MessageKind
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import TicketDraft
from tickethub.store.ap_records import SqlApStore
from tickethub.store.memory_ap import MemoryApStore

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


@pytest.fixture
def ap(store: Any) -> Any:
    return on_store(store, MemoryApStore, SqlApStore)


def _tickets(ap: Any, *drafts: TicketDraft, by: str = "agent") -> list[int]:
    with ap.write() as uow:
        return [t.id for t in uow.tickets.add_many([(d, by) for d in drafts], NOW)]


def _task(task_id: str, ticket_id: int, extra: Any = None) -> TaskRecord:
    return TaskRecord(task_id, ticket_id, f"input of {task_id}", extra, NOW)


def _message(ap: Any, ticket_id: int, author: str = "alice", via: str = "web",
             kind: MessageKind = MessageKind.COMMENT, trusted: bool = True) -> int:
    with ap.write() as uow:
        [m] = uow.messages.add_many([MessageDraft(ticket_id, author, via, "text", kind,
                                                  trusted)], NOW)
    return int(m.id)


def _artifact(artifact_id: str, task_id: str, step_id: str | None = None) -> ArtifactRecord:
    return ArtifactRecord(artifact_id, task_id, step_id, True, f"{artifact_id}.txt", None, 3,
                          f"{task_id}/{artifact_id}", "agent", NOW)


def test_tasks_are_found_by_id_and_listed_by_ticket_with_the_total(ap: Any) -> None:
    a, b, c = _tickets(ap, *(TicketDraft(Kind.TASK, f"t{i}") for i in range(3)))
    with ap.write() as uow:  # not in ticket order: the list is
        uow.ap.add_tasks([_task("tc", c), _task("ta", a, {"n": (1, 2)})])
        uow.ap.add_tasks([_task("tb", b)])
    with ap.read() as uow:
        found = uow.ap.get_task("ta")
        assert found == TaskRecord("ta", a, "input of ta", {"n": [1, 2]}, NOW)
        assert uow.ap.get_task("nope") is None
        page, total = uow.ap.list_tasks(TaskFilter(), 0, 2)
        assert [t.task_id for t in page] == ["ta", "tb"] and total == 3
        page, total = uow.ap.list_tasks(TaskFilter(), 2, 2)
        assert [t.task_id for t in page] == ["tc"] and total == 3
        assert uow.ap.list_tasks(TaskFilter(), 5, 2) == ([], 3)
    found.additional_input.clear()
    with ap.read() as uow:  # what was handed out is the caller's own
        assert uow.ap.get_task("ta").additional_input == {"n": [1, 2]}


def test_a_task_datetime_comes_back_in_utc(ap: Any) -> None:
    [a] = _tickets(ap, TicketDraft(Kind.TASK, "t"))
    local = NOW.astimezone(timezone(timedelta(hours=2)))
    with ap.write() as uow:
        uow.ap.add_tasks([TaskRecord("ta", a, None, None, local)])
    with ap.read() as uow:
        stored = uow.ap.get_task("ta").created_at
    assert stored == NOW and stored.utcoffset() == timedelta(0)


def test_tasks_are_filtered_by_status_label_input_and_reader(ap: Any) -> None:
    a, b = _tickets(ap, TicketDraft(Kind.TASK, "a", labels=("ops",),
                                    refs={"env": "prod", "ids": [7, 8]}),
                    TicketDraft(Kind.TASK, "b", refs={"env": "dev"}))
    [c] = _tickets(ap, TicketDraft(Kind.TASK, "c"), by="other-agent")
    [below] = _tickets(ap, TicketDraft(Kind.TASK, "below", parent_id=c), by="third")
    with ap.write() as uow:
        uow.ap.add_tasks([_task(f"t{i}", i) for i in (a, b, c, below)])
        ticket = uow.tickets.get(b)
        assert uow.tickets.update(replace(ticket, status=Status.DONE,
                                          version=ticket.version + 1), ticket.version)

    def ids(**filters: Any) -> tuple[list[int], int]:
        with ap.read() as uow:
            page, total = uow.ap.list_tasks(TaskFilter(**filters), 0, 10)
        return [t.ticket_id for t in page], total

    assert ids(status=(Status.DONE,)) == ([b], 1)
    assert ids(status=(Status.OPEN, Status.DONE)) == ([a, b, c, below], 4)
    assert ids(label=" OPS ") == ([a], 1)
    assert ids(label="none") == ([], 0)
    assert ids(inputs=(("env", "prod"),)) == ([a], 1)
    assert ids(inputs=(("ids", "8"), ("env", "prod"))) == ([a], 1)
    assert ids(inputs=(("ids", "8"), ("env", "dev"))) == ([], 0)
    assert ids(readable_by="other-agent") == ([c, below], 2)
    assert ids(readable_by="third") == ([below], 1)
    assert ids(readable_by="nobody") == ([], 0)


def test_a_task_id_or_a_ticket_taken_twice_is_refused_and_the_batch_kept_out(ap: Any
                                                                            ) -> None:
    a, b = _tickets(ap, TicketDraft(Kind.TASK, "a"), TicketDraft(Kind.TASK, "b"))
    with ap.write() as uow:
        uow.ap.add_tasks([_task("ta", a)])
    for records in ([_task("tb", b), _task("ta", b)],  # the id again
                    [_task("tb", b), _task("tc", a)],  # the ticket again
                    [_task("tb", b), _task("tc", 999_999)]):  # no such ticket
        with pytest.raises(REFUSED), ap.write() as uow:
            uow.ap.add_tasks(records)
        with ap.read() as uow:
            assert uow.ap.get_task("tb") is None and uow.ap.get_task("tc") is None
            assert uow.ap.list_tasks(TaskFilter(), 0, 10)[1] == 1


def test_a_write_that_raises_keeps_no_task_step_or_artifact(ap: Any) -> None:
    [a] = _tickets(ap, TicketDraft(Kind.TASK, "a"))
    with pytest.raises(RuntimeError), ap.write() as uow:
        uow.ap.add_tasks([_task("ta", a)])
        [m] = uow.messages.add_many([MessageDraft(a, "agent", AP_CHANNEL, "go",
                                                  MessageKind.COMMENT, True)], NOW)
        uow.ap.add_steps([StepRecord("s1", "ta", "go", None, m.id, "agent", NOW)])
        uow.ap.add_artifact(_artifact("f1", "ta", "s1"))
        raise RuntimeError("the request failed after the writes")
    with ap.read() as uow:
        assert uow.ap.get_task("ta") is None and uow.ap.steps(["ta"]) == []
        assert uow.ap.artifacts(["ta"]) == [] and uow.ap.messages([a]) == []
    with ap.write() as uow:  # the ids are free again
        uow.ap.add_tasks([_task("ta", a)])
        uow.ap.add_artifact(_artifact("f1", "ta"))


def test_a_transaction_of_the_hubs_store_joined_writes_tasks_in_it(store: Any, ap: Any
                                                                    ) -> None:
    """``join``: the hub's write path opens the transaction on its own store, and the
    task rows of its creates go into it (``TaskRows``, ``StepWriter``)."""
    a, b = _tickets(ap, TicketDraft(Kind.TASK, "a"), TicketDraft(Kind.TASK, "b"))
    with store.write() as uow:
        joined = ap.join(uow)
        assert joined.tickets.get(a) is not None  # the same transaction's repositories
        joined.ap.add_tasks([_task("ta", a)])
        assert ap.join(uow).ap.get_task("ta") is not None  # joined again: the same
    with pytest.raises(RuntimeError), store.write() as uow:
        ap.join(uow).ap.add_tasks([_task("tb", b)])
        raise RuntimeError("rolled back with the transaction it joined")
    with ap.read() as uow:
        assert uow.ap.get_task("ta") is not None and uow.ap.get_task("tb") is None


def test_steps_in_order_the_latest_and_one_by_its_task(ap: Any) -> None:
    a, b = _tickets(ap, TicketDraft(Kind.TASK, "a"), TicketDraft(Kind.TASK, "b"))
    with ap.write() as uow:
        uow.ap.add_tasks([_task("ta", a), _task("tb", b)])
    m = [_message(ap, t, via=AP_CHANNEL) for t in (a, b, a, a)]
    with ap.write() as uow:
        uow.ap.add_steps([StepRecord("s1", "ta", "one", {"k": (1,)}, m[0], "agent", NOW),
                          StepRecord("s2", "tb", None, None, m[1], "agent", NOW)])
        uow.ap.add_steps([StepRecord("s0", "ta", "two", None, m[2], "agent", NOW)])
    with ap.read() as uow:
        assert [s.step_id for s in uow.ap.steps(["ta"])] == ["s1", "s0"]  # oldest first
        assert [s.step_id for s in uow.ap.steps(["tb", "ta"])] == ["s1", "s2", "s0"]
        assert uow.ap.steps(["nope"]) == []
        assert uow.ap.latest_step("ta").step_id == "s0"
        assert uow.ap.latest_step("nope") is None
        assert uow.ap.get_step("ta", "s1") == StepRecord("s1", "ta", "one", {"k": [1]}, m[0],
                                                         "agent", NOW)
        assert uow.ap.get_step("tb", "s1") is None  # another task's step
        assert uow.ap.get_step("ta", "nope") is None
    for bad in (StepRecord("s1", "ta", None, None, m[3], "agent", NOW),  # id again
                StepRecord("s9", "nope", None, None, m[3], "agent", NOW),  # no task
                StepRecord("s9", "ta", None, None, 999_999, "agent", NOW)):  # no message
        with pytest.raises(REFUSED), ap.write() as uow:
            uow.ap.add_steps([bad])
    with ap.read() as uow:
        assert [s.step_id for s in uow.ap.steps(["ta", "tb"])] == ["s1", "s2", "s0"]


def test_a_step_is_claimed_once_until_its_lease_ends_or_it_is_released(ap: Any) -> None:
    [a] = _tickets(ap, TicketDraft(Kind.TASK, "a"))
    with ap.write() as uow:
        uow.ap.add_tasks([_task("ta", a)])
    m = [_message(ap, a, via=AP_CHANNEL) for _ in range(2)]
    with ap.write() as uow:
        uow.ap.add_steps([StepRecord("s1", "ta", "one", None, m[0], "agent", NOW),
                          StepRecord("s2", "ta", "two", None, m[1], "agent", NOW)])
    lease = NOW + timedelta(minutes=5)
    with ap.write() as uow:
        assert uow.ap.claim_steps(["s1", "nope"], NOW, lease) == {"s1"}
    with ap.write() as uow:  # another process: s1 is held, s2 is free
        assert uow.ap.claim_steps(["s1", "s2"], NOW, lease) == {"s2"}
    with ap.write() as uow:  # after the lease anyone may take it again
        assert uow.ap.claim_steps(["s1"], lease + timedelta(seconds=1),
                                  lease + timedelta(minutes=5)) == {"s1"}
    with ap.write() as uow:
        uow.ap.release_steps(["s2"])
    with ap.write() as uow:
        assert uow.ap.claim_steps(["s1", "s2"], NOW, lease) == {"s2"}
    with pytest.raises(RuntimeError), ap.write() as uow:  # a claim rolled back is no claim
        uow.ap.release_steps(["s1"])
        raise RuntimeError("rolled back")
    with ap.write() as uow:
        assert uow.ap.claim_steps(["s1"], NOW, lease) == set()
        assert uow.ap.claim_steps([], NOW, lease) == set()


def test_a_step_stored_claimed_is_renewed_until_its_claim_lapses(ap: Any) -> None:
    """The in-hub worker's claims: a step stored while its handler runs is claimed in
    the same write; renewal extends only claims that still hold; a lapsed claim is
    listed (its process stopped), oldest first, and anyone may take it."""
    [a] = _tickets(ap, TicketDraft(Kind.TASK, "a"))
    with ap.write() as uow:
        uow.ap.add_tasks([_task("ta", a)])
    m = [_message(ap, a, via=AP_CHANNEL) for _ in range(3)]
    soon, later = NOW + timedelta(seconds=30), NOW + timedelta(seconds=60)
    with ap.write() as uow:
        uow.ap.add_steps([StepRecord("s1", "ta", "one", None, m[0], "agent", NOW),
                          StepRecord("s2", "ta", "two", None, m[1], "agent", NOW),
                          StepRecord("s3", "ta", "three", None, m[2], "agent", NOW)],
                         claims={"s2": later, "s1": soon})
    with ap.read() as uow:  # stored in order, whatever their claims
        assert [s.step_id for s in uow.ap.steps(["ta"])] == ["s1", "s2", "s3"]
        assert uow.ap.lapsed_claims(NOW, 10) == []
        assert uow.ap.lapsed_claims(later + timedelta(seconds=1), 10) == [
            ("ta", "s1"), ("ta", "s2")]  # s3 has no claim: not lapsed, never held
        assert uow.ap.lapsed_claims(later + timedelta(seconds=1), 1) == [("ta", "s1")]
    with ap.write() as uow:  # held: nobody else claims them
        assert uow.ap.claim_steps(["s1", "s2", "s3"], NOW, later) == {"s3"}
    with ap.write() as uow:  # s1 lapsed at ``soon``: not renewed; s2 holds: renewed
        assert uow.ap.renew_claims(["s1", "s2", "nope"], soon + timedelta(seconds=1),
                                   later + timedelta(seconds=60)) == {"s2"}
        assert uow.ap.renew_claims([], NOW, later) == set()
    with ap.read() as uow:
        assert uow.ap.lapsed_claims(later + timedelta(seconds=1), 10) == [
            ("ta", "s1"), ("ta", "s3")]
    with ap.write() as uow:
        uow.ap.release_steps(["s1", "s3"])
    with ap.read() as uow:
        assert uow.ap.lapsed_claims(later + timedelta(hours=1), 10) == [("ta", "s2")]


def test_replies_are_trusted_comments_and_answers_not_step_inputs(ap: Any) -> None:
    a, b = _tickets(ap, TicketDraft(Kind.TASK, "a"), TicketDraft(Kind.TASK, "b"))
    start = _message(ap, a, author="agent", via=AP_CHANNEL)
    mine = _message(ap, a, author="agent", via="api")
    _message(ap, a, via=AP_CHANNEL)  # a step input: never a reply
    _message(ap, a, trusted=False)  # someone not allowed to steer
    _message(ap, a, kind=MessageKind.SYSTEM)
    reply = _message(ap, a)
    answer = _message(ap, a, kind=MessageKind.ANSWER)
    other = _message(ap, b)
    with ap.read() as uow:
        assert [m.id for m in uow.ap.replies_after([a], start)] == [mine, reply, answer]
        assert [m.id for m in uow.ap.replies_after([a, b], reply)] == [answer, other]
        assert uow.ap.replies_after([a, b], other) == []
        assert uow.ap.first_reply(a, "ta", start, "agent").id == reply
        assert uow.ap.first_reply(a, "ta", reply, "agent").id == answer
        assert uow.ap.first_reply(a, "ta", start, "alice").id == mine
        assert uow.ap.first_reply(a, "ta", answer, "agent") is None
        assert [m.id for m in uow.ap.messages([b])] == [other]
        assert len(uow.ap.messages([a, b])) == 8 and uow.ap.messages([]) == []


def test_artifacts_by_task_by_step_in_pages_and_one_by_its_task(ap: Any) -> None:
    a, b = _tickets(ap, TicketDraft(Kind.TASK, "a"), TicketDraft(Kind.TASK, "b"))
    with ap.write() as uow:
        uow.ap.add_tasks([_task("ta", a), _task("tb", b)])
        for record in (_artifact("f1", "ta", "s1"), _artifact("f2", "tb"),
                       _artifact("f0", "ta"), _artifact("f3", "ta", "s1")):
            uow.ap.add_artifact(record)
    with ap.read() as uow:
        assert [x.artifact_id for x in uow.ap.artifacts(["ta"])] == ["f1", "f0", "f3"]
        assert [x.artifact_id for x in uow.ap.artifacts(["tb", "ta"])] == [
            "f1", "f2", "f0", "f3"]
        page, total = uow.ap.artifact_page("ta", 1, 1)
        assert [x.artifact_id for x in page] == ["f0"] and total == 3
        assert uow.ap.artifact_page("nope", 0, 5) == ([], 0)
        assert [x.artifact_id for x in uow.ap.step_artifacts("s1")] == ["f1", "f3"]
        assert [x.artifact_id for x in uow.ap.artifacts_of_steps(["s1", "s9"])] == [
            "f1", "f3"]
        assert uow.ap.get_artifact("ta", "f0") == _artifact("f0", "ta")
        assert uow.ap.get_artifact("tb", "f0") is None  # another task's
        assert uow.ap.get_artifact("ta", "nope") is None
    for bad in (_artifact("f1", "tb"), _artifact("f9", "nope")):
        with pytest.raises(REFUSED), ap.write() as uow:
            uow.ap.add_artifact(bad)


def test_the_tickets_behind_tasks(ap: Any) -> None:
    a, b, plain = _tickets(ap, TicketDraft(Kind.TASK, "a"), TicketDraft(Kind.TASK, "b"),
                           TicketDraft(Kind.QUESTION, "not a task"))
    with ap.write() as uow:
        uow.ap.add_tasks([_task("ta", a), _task("tb", b)])
    with ap.read() as uow:
        ticket = uow.tickets.get(a)
        assert uow.ap.task_ticket("ta") == ticket
        assert uow.ap.task_ticket("nope") is None
        assert uow.ap.open_tasks(["tb", "ta", "nope"]) == {
            "ta": TaskTicket.of(ticket), "tb": TaskTicket.of(uow.tickets.get(b))}
        assert uow.ap.task_tickets([plain, 999_999]) == {
            plain: TaskTicket(plain, f"/{plain}/", Status.OPEN, "agent")}
        assert sorted(t.id for t in uow.ap.tickets([b, a, 999_999])) == [a, b]
        assert uow.ap.tickets([]) == []
    with ap.write() as uow:  # and locked in a write
        assert uow.ap.open_tasks(["ta"])["ta"].waiting
