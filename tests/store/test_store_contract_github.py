"""The store contract, the GitHub channel's state (``GithubStore``): repository
connections, issue links, the comment ledger, exactly-once writes and the webhook inbox,
on the in-memory store, SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.store.conftest import REFUSED, on_store
from tickethub.domain.github import CommentRecord, IssueLink, RepoConnection
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.store.github_store import SqlGithubStore
from tickethub.store.memory_github import MemoryGithubStore

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
LATER = NOW + timedelta(minutes=5)


@pytest.fixture
def github(store: Any) -> Any:
    return on_store(store, MemoryGithubStore, SqlGithubStore)


def _tickets(store: Any, n: int) -> list[int]:
    with store.write() as uow:
        return [t.id for t in uow.tickets.add_many(
            [(TicketDraft(Kind.TASK, f"t{i}"), "agent") for i in range(n)], NOW)]


def _conn(name: str, **more: Any) -> RepoConnection:
    return RepoConnection(id=0, full_name=name, connected_by="root", created_at=NOW, **more)


def _link(ticket_id: int, repo: str = "o/r", number: int = 1, **more: Any) -> IssueLink:
    return IssueLink(ticket_id, repo, number, 1000 + number, created_at=NOW, updated_at=NOW,
                     **more)


def test_connections_are_added_changed_listed_and_deleted(github: Any) -> None:
    a = github.add_connection(_conn("o/a", labels=("ops",), kinds=("question",)))
    b = github.add_connection(_conn("o/b", match_all=True))
    assert 0 < a.id < b.id and a.labels == ("ops",)
    assert github.connections() == [a, b]
    polled = replace(a, poll=True, poll_since="2026-03-04T00:00:00Z", poll_etag='W/"x"',
                     next_poll_at=LATER, last_polled_at=NOW, labels=("ops", "db"))
    github.update_connection(polled)
    github.update_connection(replace(b, id=999_999, full_name="o/ghost"))  # unknown: nothing
    assert github.connections() == [polled, b]
    with pytest.raises(REFUSED):
        github.add_connection(_conn("o/a"))  # one connection per repository
    assert github.delete_connection("o/a") and not github.delete_connection("o/a")
    assert github.connections() == [b]
    c = github.add_connection(_conn("o/a"))  # again after deletion: a new id
    assert c.id > b.id


def test_issue_links_are_saved_once_per_ticket_and_per_issue(github: Any, store: Any
                                                             ) -> None:
    a, b, c = _tickets(store, 3)
    github.save_link(_link(b, number=2, labels=("x",)))
    github.save_link(_link(a, number=1))
    github.save_link(_link(c, repo="o/other", number=1))
    assert github.link(b) == _link(b, number=2, labels=("x",))
    assert github.link(999_999) is None
    assert github.link_by_number("o/r", 1).ticket_id == a
    assert github.link_by_number("o/r", 3) is None
    assert [x.ticket_id for x in github.links(None)] == [a, b, c]
    assert [x.ticket_id for x in github.links("o/r")] == [a, b]
    closed = _link(b, number=2, state="closed", status_comment_id=77, status_hash="h",
                   assignee="ann", parent_linked=True)
    github.save_link(replace(closed, updated_at=LATER))  # saved again: replaced
    assert github.link(b) == replace(closed, updated_at=LATER)
    for bad in (_link(c, number=1),  # another ticket's issue
                _link(999_999, number=9)):  # no such ticket
        with pytest.raises(REFUSED):
            github.save_link(bad)
    assert github.link(c).repo == "o/other" and github.link_by_number("o/r", 9) is None


def test_comments_keep_their_first_time_and_take_changes(github: Any) -> None:
    record = CommentRecord(55, "o/r", 1, "ann", True, "hash1", command="answer",
                           created_at=NOW)
    assert github.comment(55) is None
    github.save_comment(record, NOW)
    assert github.comment(55) == record
    edited = replace(record, body_hash="hash2", edits=1, consumed=True, outcome="answered",
                     created_at=LATER)
    github.save_comment(edited, LATER)
    assert github.comment(55) == replace(edited, created_at=NOW)  # when first stored
    github.save_comment(CommentRecord(56, "o/r", 1, "bob", False, "h"), LATER)
    assert github.comment(56).created_at == LATER  # no time given: when stored


def test_a_write_is_claimed_once_and_finished_with_its_object(github: Any) -> None:
    assert github.write_state("issue:1") == (False, None)
    github.claim_write("issue:1", NOW)
    assert github.write_state("issue:1") == (True, None)
    github.claim_write("issue:1", LATER)  # claimed again: as it was
    github.finish_write("issue:1", 2**40, LATER)  # GitHub ids outgrow 32 bits
    assert github.write_state("issue:1") == (True, 2**40)
    github.finish_write("comment:9", 7, NOW)  # finished without a claim
    assert github.write_state("comment:9") == (True, 7)
    github.claim_write("comment:9", LATER)
    assert github.write_state("comment:9") == (True, 7)


def test_the_inbox_takes_a_delivery_once_and_hands_out_the_due_ones(github: Any) -> None:
    first = github.inbox_add("d1", "issues", '{"a": 1}', NOW)
    assert first is not None and github.inbox_add("d1", "issues", "{}", NOW) is None
    second = github.inbox_add("d2", "issue_comment", "{}", NOW)
    third = github.inbox_add("d3", "ping", "{}", NOW)
    assert first < second < third
    item = github.inbox_item("d1")
    assert (item.id, item.delivery_id, item.event, item.payload, item.status, item.attempts,
            item.error, item.received_at, item.next_attempt_at) == (
        first, "d1", "issues", '{"a": 1}', "pending", 0, None, NOW, None)
    assert github.inbox_item("nope") is None
    assert [i.delivery_id for i in github.inbox_pending(10, NOW)] == ["d1", "d2", "d3"]
    assert [i.delivery_id for i in github.inbox_pending(2, NOW)] == ["d1", "d2"]
    github.inbox_finish(first, "done", None, NOW)
    github.inbox_finish(second, "pending", "boom", NOW, next_attempt_at=LATER)  # retry later
    github.inbox_finish(999_999, "done", None, NOW)  # unknown: nothing
    assert [i.delivery_id for i in github.inbox_pending(10, NOW)] == ["d3"]
    assert [i.delivery_id for i in github.inbox_pending(10, LATER)] == ["d2", "d3"]
    retried = github.inbox_item("d2")
    assert (retried.attempts, retried.error, retried.next_attempt_at) == (1, "boom", LATER)
    github.inbox_finish(second, "failed", "boom again", LATER)
    assert github.inbox_item("d2").attempts == 2
    assert github.inbox_counts() == {"done": 1, "failed": 1, "pending": 1}


def test_what_a_batch_wrote_is_gone_when_it_raises(github: Any, store: Any) -> None:
    [a] = _tickets(store, 1)
    with pytest.raises(RuntimeError), store.batch():
        github.add_connection(_conn("o/a"))
        github.save_link(_link(a))
        github.save_comment(CommentRecord(55, "o/r", a, "ann", True, "h"), NOW)
        github.claim_write("issue:1", NOW)
        github.inbox_add("d1", "issues", "{}", NOW)
        assert github.link(a) is not None  # the batch sees its own writes
        raise RuntimeError("the batch failed")
    assert github.connections() == [] and github.link(a) is None
    assert github.comment(55) is None and github.write_state("issue:1") == (False, None)
    assert github.inbox_item("d1") is None and github.inbox_counts() == {}
    assert github.inbox_add("d1", "issues", "{}", NOW) is not None
