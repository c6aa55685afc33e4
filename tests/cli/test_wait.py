"""``ask --wait`` and ``wait``: block until answered, then exit with the outcome's code.
The blocking case runs the real ``tickethub`` executable in a subprocess, as a script
would, and a second "terminal" answers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tickethub.cli import output
from tickethub.sdk import Hub

TICKETHUB = str(Path(sys.executable).with_name("tickethub"))


def find_one(hub: Hub, label: str, timeout: float = 30) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = list(hub.list(label=label))
        if found:
            return found[0].id
        time.sleep(0.05)
    raise AssertionError(f"no ticket labelled {label}")


def test_ask_wait_blocks_until_a_second_terminal_answers(hub_process, responder_token
                                                         ) -> None:
    env = {**os.environ, "TICKETHUB_URL": hub_process.url,
           "TICKETHUB_TOKEN": hub_process.admin_token}
    asking = subprocess.Popen(
        [TICKETHUB, "ask", "Which region?", "--label", "tour", "--wait"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with Hub(hub_process.url, responder_token) as responder:
            ticket_id = find_one(responder, "tour")
            time.sleep(0.3)
            assert asking.poll() is None, "ask --wait returned before the answer"
            responder.answer(ticket_id, "eu-west-1", data={"zone": "b"})
        stdout, stderr = asking.communicate(timeout=30)
    finally:
        if asking.poll() is None:
            asking.kill()
    assert asking.returncode == 0, stderr
    assert stdout.splitlines() == ["eu-west-1", '{"zone": "b"}']
    assert f"asked #{ticket_id}, waiting" in stderr


def test_outcomes_have_their_own_exit_codes(run, admin: Hub, responder_token: str) -> None:
    with Hub(admin.url, responder_token) as responder:
        denied = admin.ask("risky?", kind="approval")
        responder.deny(denied.id, reason="too risky")
        approved = admin.ask("safe?", kind="approval")
        responder.approve(approved.id, comment="fine")
    cancelled = admin.ask("never mind")
    admin.transition(cancelled.id, "cancelled")

    result = run("wait", str(denied.id))
    assert (result.exit_code, result.stdout.strip()) == (output.DENIED, "too risky")
    assert "denied" in result.stderr
    assert run("wait", str(approved.id)).exit_code == output.OK
    assert run("wait", str(cancelled.id)).exit_code == output.CANCELLED == 12


def test_expiry_and_timeout(run, admin: Hub) -> None:
    expiring = run("ask", "quick!", "--due", "1s", "--wait", "--timeout", "30")
    assert expiring.exit_code == output.EXPIRED == 11
    approval = run("ask", "approve fast", "--kind", "approval", "--due", "1s", "--wait",
                   "--json")
    assert approval.exit_code == output.DENIED  # an expired approval fails closed
    assert '"status": "expired"' in approval.stdout
    waiting = run("ask", "nobody", "--wait", "--timeout", "0.3")
    assert waiting.exit_code == output.STILL_WAITING == 13
    assert waiting.stdout.strip() == "still open"


@pytest.mark.parametrize("inherited", [signal.SIG_DFL, signal.SIG_IGN],
                         ids=["foreground", "background-job"])
def test_ctrl_c_stops_waiting_and_leaves_the_ticket_open(hub_process, admin: Hub,
                                                         inherited: signal.Handlers) -> None:
    """Also when started as a shell's background job, which inherits SIGINT ignored."""
    ticket = admin.ask("interrupt me")
    env = {**os.environ, "TICKETHUB_URL": hub_process.url,
           "TICKETHUB_TOKEN": hub_process.admin_token}
    waiting = subprocess.Popen([TICKETHUB, "wait", str(ticket.id)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, inherited))
    try:
        deadline = time.monotonic() + 30
        while admin.health()["waiters"] < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        waiting.send_signal(signal.SIGINT)
        _, stderr = waiting.communicate(timeout=30)
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == output.INTERRUPTED == 130
    assert stderr.strip() == (f"stopped waiting; ticket #{ticket.id} stays open "
                              f"(tickethub wait {ticket.id} to go on)")
    assert admin.get(ticket.id).waiting
    admin.transition(ticket.id, "cancelled")  # frees the long-poll the hub still holds
