"""Whole conversations replayed from transcripts, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conversations.conftest import Hub
from tickethub.conversations.forms import Field, Form
from tickethub.conversations.handlers import command
from tickethub.conversations.transcript import parse, replay
from tickethub.domain.status import Status
from tickethub.testing import FakeClock

TRANSCRIPTS = Path(__file__).parent / "transcripts"


def _load(name: str) -> str:
    return (TRANSCRIPTS / f"{name}.txt").read_text(encoding="utf-8")


def test_foodselection_survives_a_restart_and_a_second_person(
        make_hub: Callable[..., Hub], clock: FakeClock) -> None:
    hub = make_hub()
    replayer = replay(_load("foodselection_restart"), hub.build, clock)
    # bob's "2" was kept on alice's ticket, not obeyed: the diet is alice's answer.
    conv = hub.state.open_for("alice")
    assert conv == []
    ticket = hub.tickets.get(1)
    assert ticket.status is Status.ANSWERED
    assert ticket.answer is not None
    assert ticket.answer.data == {"day": "2026-01-02", "dish": "Falafel bowl",
                                  "diet": "Gluten-free", "person": "alice"}
    assert ticket.refs["chat_participant"] == "alice"
    kept = [(m.author, m.body, m.trusted) for m in hub.tickets.messages(1)
            if m.author == "bob"]
    assert kept == [("bob", "who's ordering?", False), ("bob", "2", False)]
    assert "5 kept: on #1 of alice, not obeyed" in replayer.traces[3]


def test_timeout_fires_after_a_restart_and_tells_the_user(
        make_hub: Callable[..., Hub], clock: FakeClock) -> None:
    hub = make_hub()
    replay(_load("timeout_after_restart"), hub.build, clock)
    assert hub.tickets.get(1).status is Status.CANCELLED


def test_timeout_missed_while_down_fires_at_start(
        make_hub: Callable[..., Hub], clock: FakeClock) -> None:
    hub = make_hub()
    replay(_load("timeout_missed_while_down"), hub.build, clock)


def test_wrong_answers_get_one_prompt_each_then_a_person(
        make_hub: Callable[..., Hub], clock: FakeClock) -> None:
    hub = make_hub()
    replay(_load("handoff_after_three_tries"), hub.build, clock)
    ticket = hub.tickets.get(1)
    assert ticket.waiting and "handoff" in ticket.labels


def test_cancel_help_and_a_retried_event(make_hub: Callable[..., Hub],
                                         clock: FakeClock) -> None:
    hub = make_hub()
    replay(_load("cancel_help_retry"), hub.build, clock)
    assert hub.tickets.get(1).status is Status.CANCELLED


def test_only_the_participant_or_a_responder_answers_a_prompt(
        make_hub: Callable[..., Hub], clock: FakeClock) -> None:
    hub = make_hub(responders=frozenset({"carol"}))
    replay(_load("who_may_answer"), hub.build, clock)
    messages = {m.author: m.trusted for m in hub.tickets.messages(1)}
    assert messages["bob"] is False and messages["carol"] is True


def _secret_form() -> list[Form]:
    return [Form(
        name="wifi", triggers=(command("wifi"),),
        fields=[Field("password", "Send me the new Wi-Fi password.", direct=True)],
        finish=lambda values, turn: ("Stored.", {"length": len(values["password"])}),
    )]


def test_a_secret_step_insists_on_a_direct_message(
        make_hub: Callable[..., Hub], clock: FakeClock) -> None:
    hub = make_hub(handlers=_secret_form)
    replay(_load("secret_by_direct_message"), hub.build, clock)
    bodies = [m.body for m in hub.tickets.messages(1)]
    assert not any("hunter2" in b or "correct horse" in b for b in bodies)
    answer = hub.tickets.get(1).answer
    assert answer is not None and answer.data == {"length": 13}


def test_an_unknown_thread_and_plain_chatter_are_ignored(
        make_hub: Callable[..., Hub], clock: FakeClock) -> None:
    hub = make_hub()
    replayer = replay(_load("chatter_ignored"), hub.build, clock)
    assert replayer.traces[0].endswith("6 ignored")
    assert replayer.traces[1].endswith("6 ignored")  # not addressed to the bot


def test_a_transcript_line_that_is_neither_is_refused() -> None:
    with pytest.raises(ValueError, match="not a transcript line"):
        parse("alice says hi")
