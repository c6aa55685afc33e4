"""The store contract, the conversation engine's state (``ChatState``): the per-thread
inbox, the thread's compare-and-set version, conversations and prompts, on the
in-memory store, SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import insert, text

from tests.store.conftest import REFUSED, on_store
from tickethub.domain.chat import ConversationChange, ConversationRecord, InboxItem
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.store.chat_store import SqlChatState, chat_sync_tokens
from tickethub.store.memory_chat import MemoryChatState
from tickethub.store.sql_store import SqlStore

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
T = "matrix:!room:$root"


@pytest.fixture
def chat(store: Any) -> Any:
    return on_store(store, MemoryChatState, SqlChatState)


def _tickets(store: Any, n: int) -> list[int]:
    with store.write() as uow:
        return [t.id for t in uow.tickets.add_many(
            [(TicketDraft(Kind.TASK, f"conversation {i}"), "chat") for i in range(n)], NOW)]


def _new(ticket_id: int, participant: str = "@ann", thread: str = T,
         due_at: datetime | None = None, state: Any = None) -> ConversationChange:
    return ConversationChange(None, ticket_id, thread, participant, "food",
                              state or {"step": "start"}, "open", due_at)


def test_a_message_is_queued_once_per_event_id_in_arrival_order(chat: Any) -> None:
    first = chat.receive(T, "matrix", "$e1", "@ann", "hi", {"n": (1,)}, NOW)
    assert first.thread == T and first.status == "pending" and first.route is None
    assert chat.receive(T, "matrix", "$e1", "@ann", "hi again", {}, NOW) is None  # retry
    second = chat.receive(T, "matrix", "$e2", "@bob", "yo", {}, NOW)
    other = chat.receive("slack:C1:1", "slack", "$e1", "U1", "same id, other transport",
                         {}, NOW)
    assert other is not None and first.seq < second.seq < other.seq
    assert chat.items(T) == [
        InboxItem(first.seq, T, "matrix", "$e1", "@ann", "hi", {"n": [1]}, "pending", None,
                  NOW),
        InboxItem(second.seq, T, "matrix", "$e2", "@bob", "yo", {}, "pending", None, NOW)]
    assert chat.items("never") == []


def test_a_thread_reads_its_version_open_conversations_and_oldest_pending(chat: Any,
                                                                          store: Any
                                                                          ) -> None:
    a, b = _tickets(store, 2)
    empty = chat.snapshot(T)
    assert (empty.version, empty.open, empty.next_item) == (0, [], None)
    first = chat.receive(T, "matrix", "$e1", "@ann", "hi", {}, NOW)
    chat.receive(T, "matrix", "$e2", "@ann", "pizza", {}, NOW)
    snap = chat.snapshot(T)
    assert snap.version == 0 and snap.next_item == first
    ids = chat.commit(T, 0, first.seq, "food:start", [_new(a), _new(b, "@bob")], NOW)
    assert ids is not None and ids[0] < ids[1]
    snap = chat.snapshot(T)
    assert snap.version == 1 and snap.next_item.event_id == "$e2"
    assert [c.ticket_id for c in snap.open] == [a, b]
    assert chat.items(T)[0].status == "done" and chat.items(T)[0].route == "food:start"
    assert chat.snapshot("matrix:!other:$x").open == []


def test_threads_with_messages_to_handle_are_found_per_transport(chat: Any) -> None:
    """What a pump scans for: threads with pending messages of its transport, the one
    with the oldest such message first; handled ones drop out."""
    other = "slack:C1:2"
    assert chat.pending_threads("slack") == []
    first = chat.receive("slack:C1:1", "slack", "e1", "U1", "a", {}, NOW)
    chat.receive(other, "slack", "e2", "U1", "b", {}, NOW)
    chat.receive("slack:C1:1", "slack", "e3", "U1", "c", {}, NOW)
    chat.receive(T, "matrix", "$e1", "@ann", "hi", {}, NOW)
    assert chat.pending_threads("slack") == ["slack:C1:1", other]
    assert chat.pending_threads("matrix") == [T]
    assert chat.commit("slack:C1:1", 0, first.seq, "r", [], NOW) == []
    assert chat.pending_threads("slack") == [other, "slack:C1:1"]  # e3 is newer than e2
    second = chat.snapshot(other).next_item
    assert chat.commit(other, 0, second.seq, "r", [], NOW) == []
    assert chat.pending_threads("slack") == ["slack:C1:1"]
    assert chat.pending_threads("telegram") == []


def test_a_commit_at_a_stale_version_changes_nothing(chat: Any, store: Any) -> None:
    [a] = _tickets(store, 1)
    item = chat.receive(T, "matrix", "$e1", "@ann", "hi", {}, NOW)
    assert chat.commit(T, 0, item.seq, "r1", [], NOW) == []
    assert chat.commit(T, 0, item.seq, "r2", [_new(a)], NOW) is None  # lost the race
    assert chat.commit("never seen", 0, None, "r", [], NOW) is None  # no thread row
    assert chat.snapshot(T).version == 1 and chat.by_ticket(a) is None
    assert chat.items(T)[0].route == "r1"


def test_conversations_are_added_changed_and_found(chat: Any, store: Any) -> None:
    a, b = _tickets(store, 2)
    chat.receive(T, "matrix", "$e1", "@ann", "hi", {}, NOW)
    [ann] = chat.commit(T, 0, None, "r", [_new(a, state={"picked": ("x",)})], NOW)
    later = NOW + timedelta(minutes=5)
    change = ConversationChange(ann, a, T, "@ann", "food", {"picked": ["x", "y"]}, "ended",
                                None)
    assert chat.commit(T, 1, None, "r", [change, _new(b, "@bob")], later)[0] == ann
    found = chat.conversation(ann)
    assert found == ConversationRecord(ann, a, T, "@ann", "food", {"picked": ["x", "y"]},
                                       "ended", None, NOW, later)
    assert chat.by_ticket(a) == found and chat.by_ticket(999_999) is None
    assert chat.conversation(999_999) is None
    assert chat.open_for("@ann") == [] and [c.ticket_id for c in chat.open_for("@bob")] == [b]
    found.state.clear()
    assert chat.conversation(ann).state == {"picked": ["x", "y"]}


def test_a_conversation_on_a_taken_or_unknown_ticket_rolls_the_commit_back(
        chat: Any, store: Any) -> None:
    a, b = _tickets(store, 2)
    item = chat.receive(T, "matrix", "$e1", "@ann", "hi", {}, NOW)
    chat.commit(T, 0, None, "r", [_new(a)], NOW)
    for bad in (_new(a, "@bob"), _new(999_999)):
        with pytest.raises(REFUSED):
            chat.commit(T, 1, item.seq, "r", [_new(b), bad], NOW)
        snap = chat.snapshot(T)  # the version, the item and the first change: all undone
        assert snap.version == 1 and snap.next_item == item and chat.by_ticket(b) is None


def test_open_conversations_of_a_participant_and_the_due_ones(chat: Any, store: Any) -> None:
    a, b, c, d = _tickets(store, 4)
    chat.receive(T, "matrix", "$e1", "@ann", "hi", {}, NOW)
    chat.receive("t2", "matrix", "$e2", "@ann", "hi", {}, NOW)
    soon, later = NOW + timedelta(minutes=1), NOW + timedelta(minutes=2)
    chat.commit(T, 0, None, "r", [_new(a, due_at=later), _new(b, "@bob", due_at=soon),
                                  _new(c, "@cy")], NOW)
    chat.commit("t2", 0, None, "r", [_new(d, thread="t2", due_at=NOW)], NOW)
    assert [x.ticket_id for x in chat.open_for("@ann")] == [a, d]  # any thread, oldest first
    assert chat.open_for("@nobody") == []
    assert [x.ticket_id for x in chat.due(later, 10)] == [d, b, a]  # soonest first
    assert [x.ticket_id for x in chat.due(soon, 10)] == [d, b]
    assert [x.ticket_id for x in chat.due(later, 1)] == [d]
    assert chat.due(NOW - timedelta(seconds=1), 10) == []


def test_a_prompt_is_remembered_once(chat: Any, store: Any) -> None:
    [a] = _tickets(store, 1)
    chat.receive(T, "matrix", "$e1", "@ann", "hi", {}, NOW)
    [conv] = chat.commit(T, 0, None, "r", [_new(a)], NOW)
    assert chat.prompt("$bot1") is None
    chat.add_prompt("$bot1", conv, NOW)
    chat.add_prompt("$bot1", conv + 1, NOW)  # the same prompt again: the first stays
    assert chat.prompt("$bot1") == conv
    with pytest.raises(REFUSED):
        chat.add_prompt("$bot2", 999_999, NOW)  # no such conversation
    assert chat.prompt("$bot2") is None


def test_what_a_batch_received_is_gone_when_it_raises(chat: Any, store: Any) -> None:
    with pytest.raises(RuntimeError), store.batch():
        chat.receive(T, "matrix", "$e1", "@ann", "hi", {}, NOW)
        assert [i.event_id for i in chat.items(T)] == ["$e1"]  # the batch sees it
        raise RuntimeError("the batch failed")
    assert chat.items(T) == [] and chat.snapshot(T).version == 0
    assert chat.receive(T, "matrix", "$e1", "@ann", "hi", {}, NOW) is not None


def test_a_sync_token_is_kept_per_account_and_replaced(chat: Any) -> None:
    assert chat.sync_token("matrix:@bot:hs") is None
    chat.save_sync_token("matrix:@bot:hs", "s1_2_3", NOW)
    chat.save_sync_token("matrix:@other:hs", "t9", NOW)
    assert chat.sync_token("matrix:@bot:hs") == "s1_2_3"
    chat.save_sync_token("matrix:@bot:hs", "s4_5_6", NOW + timedelta(seconds=5))
    assert chat.sync_token("matrix:@bot:hs") == "s4_5_6"
    assert chat.sync_token("matrix:@other:hs") == "t9"


def test_a_first_sync_token_saved_by_two_writers_at_once_is_saved(store: Any) -> None:
    """PostgreSQL writers run side by side (SQLite's queue on a lock, the memory store's
    on one too): a save racing another transaction's first token for the account waits
    for it and then replaces it, instead of failing on the duplicate key."""
    if not (isinstance(store, SqlStore) and store.engine.dialect.name == "postgresql"):
        pytest.skip("only PostgreSQL runs two writers at once")
    chat = SqlChatState(store)
    account = "matrix:@bot:hs"
    failed: list[BaseException] = []

    def save() -> None:
        try:
            chat.save_sync_token(account, "second", NOW + timedelta(seconds=1))
        except BaseException as error:  # handed to the test thread
            failed.append(error)

    with store.engine.connect() as other:
        other.execute(insert(chat_sync_tokens).values(account=account, token="first",
                                                      updated_at=NOW))
        saver = threading.Thread(target=save)
        saver.start()
        # Commit only once the save waits on the uncommitted row (a lock wait), so it
        # has seen no row before and must meet the other's key.
        waiting = text("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                       "current_database() AND wait_event_type = 'Lock'")
        for _ in range(3000):
            with store.engine.connect() as probe:
                if probe.execute(waiting).scalar():
                    break
            time.sleep(0.01)
        other.commit()
    saver.join()
    assert failed == []
    assert chat.sync_token(account) == "second"
