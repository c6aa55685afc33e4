"""The triage view in a real browser (Debian's Chromium driven by Playwright, against a
real hub): each action key, undo, bulk select, a phone's width, the page without
JavaScript, and axe-core's accessibility check (0 serious or critical violations)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import require_server
from tests.waiting import eventually_blocking
from tests.web.axe import serious_violations
from tests.web.live_server import LiveHub, live_hub
from tests.web.test_browser import CHROMIUM, FLAGS, SHOTS, sign_in
from tickethub.domain.actors import Role

pytestmark = pytest.mark.slow
UNDO_MS = 400  # the page's undo window, shortened for the tests
UNREAD = re.compile(r"\bunread\b")


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveHub]:
    require_server("Chromium", CHROMIUM.exists())
    pytest.importorskip("playwright")
    with live_hub(tmp_path_factory.mktemp("triage"),
                  {"pat": Role.RESPONDER, "sam": Role.RESPONDER}) as live:
        yield live


@pytest.fixture(scope="module")
def chromium(hub: LiveHub) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=FLAGS)
        yield browser
        browser.close()


def new_page(chromium: Any, hub: LiveHub, path: str = "/triage", **context: Any) -> Any:
    ctx = chromium.new_context(**{"viewport": {"width": 1280, "height": 860}, **context})
    ctx.add_init_script(f"window.tickethubUndoMs = {UNDO_MS};")
    page = ctx.new_page()
    sign_in(page, hub, "pat", path)
    return page


def ask(hub: LiveHub, title: str, kind: str = "question", **fields: Any) -> int:
    with hub.api(hub.agent_token) as api:
        response = api.post("/api/v1/tickets", json={"kind": kind, "title": title, **fields})
        assert response.status_code == 201, response.text
        ticket_id: int = response.json()["id"]
        return ticket_id


def ticket(hub: LiveHub, ticket_id: int) -> dict[str, Any]:
    with hub.api() as api:
        found: dict[str, Any] = api.get(f"/api/v1/tickets/{ticket_id}").json()
        return found


def pane_is(page: Any, ticket_id: int) -> None:
    from playwright.sync_api import expect

    expect(page.locator("#tpane")).to_have_attribute("data-id", str(ticket_id))


def test_each_action_key_acts_and_moves_on(hub: LiveHub, chromium: Any) -> None:
    from playwright.sync_api import expect

    label = ask(hub, "Tag the import job", "task")
    assign = ask(hub, "Who owns the backup?", "task")
    cancel = ask(hub, "Obsolete cleanup", "task")
    snooze = ask(hub, "Renew the certificate", "task")
    done = ask(hub, "Rotate the keys", "task")
    comment = ask(hub, "Which region?")
    reply = ask(hub, "Which database?")
    undone = ask(hub, "Delete old logs?", "approval", proposal={"days": 90})
    deny = ask(hub, "Drop the users table?", "approval", proposal={"table": "users"})
    approve = ask(hub, "Deploy v2?", "approval", proposal={"tool": "deploy",
                                                          "arguments": {"replicas": 4}})
    page = new_page(chromium, hub)
    pane_is(page, approve)  # the first row fills the pane
    page.keyboard.press("j")
    pane_is(page, deny)
    page.keyboard.press("k")
    pane_is(page, approve)
    page.screenshot(path=SHOTS / "triage.png")

    # a: approve. The row leaves at once, the next ticket opens, Undo is offered; the
    # decision is sent when the undo window has passed.
    page.keyboard.press("a")
    expect(page.locator("#toast")).to_contain_text(f"Approved #{approve}.")
    expect(page.locator("#undo")).to_be_visible()
    pane_is(page, deny)
    expect(page.locator(f'.trow[data-id="{approve}"]')).to_be_hidden()
    eventually_blocking(lambda: ticket(hub, approve)["status"] == "approved",
                        "the approval to be sent", seconds=15, every=0.1)
    got = ticket(hub, approve)["answer"]
    assert got["by"] == "pat" and got["via"] == "web"

    # d: deny asks why first; Ctrl+Enter sends.
    page.keyboard.press("d")
    expect(page.locator("#deny-reason")).to_be_focused()
    page.keyboard.type("Never in production.")
    page.keyboard.press("Control+Enter")
    pane_is(page, undone)
    eventually_blocking(lambda: ticket(hub, deny)["status"] == "denied",
                        "the denial to be sent", seconds=15, every=0.1)
    assert ticket(hub, deny)["answer"]["text"] == "Never in production."

    # z: undo before the window ends sends nothing.
    page.keyboard.press("a")
    pane_is(page, reply)
    page.keyboard.press("z")
    expect(page.locator("#toast")).to_contain_text("Undone: nothing was sent.")
    pane_is(page, undone)
    time.sleep(UNDO_MS / 1000 * 3)
    assert ticket(hub, undone)["status"] == "open"

    # r: reply (answers and resolves).
    page.keyboard.press("j")
    pane_is(page, reply)
    page.keyboard.press("r")
    expect(page.locator("#reply-text")).to_be_focused()
    page.keyboard.type("PostgreSQL 16.")
    page.keyboard.press("Control+Enter")
    pane_is(page, comment)
    eventually_blocking(lambda: ticket(hub, reply)["status"] == "answered",
                        "the reply to be sent", seconds=15, every=0.1)

    # c: a comment asks the agent something and leaves the ticket open.
    page.keyboard.press("c")
    expect(page.locator("#comment-body")).to_be_focused()
    page.keyboard.type("EU or US customers?")
    page.keyboard.press("Control+Enter")
    with hub.api(hub.agent_token) as api:
        eventually_blocking(lambda: [m["body"] for m in api.get(
            f"/api/v1/tickets/{comment}/messages").json()] == ["EU or US customers?"],
                            "the comment to reach the ticket", seconds=15, every=0.1)
    assert ticket(hub, comment)["status"] == "open"
    pane_is(page, comment)
    expect(page.locator("#tpane .thread")).to_contain_text("EU or US customers?")

    # x: done; s: snooze; #: cancel.
    page.keyboard.press("j")
    pane_is(page, done)
    page.keyboard.press("x")
    pane_is(page, snooze)
    eventually_blocking(lambda: ticket(hub, done)["status"] == "done",
                        "the ticket to be done", seconds=15, every=0.1)
    page.keyboard.press("s")
    pane_is(page, cancel)
    eventually_blocking(lambda: ticket(hub, snooze)["status"] == "deferred",
                        "the ticket to be snoozed", seconds=15, every=0.1)
    assert ticket(hub, snooze)["next_attention_at"]
    page.keyboard.press("#")
    pane_is(page, assign)
    eventually_blocking(lambda: ticket(hub, cancel)["status"] == "cancelled",
                        "the ticket to be cancelled", seconds=15, every=0.1)

    # g: assign; l: label (Enter in the one-line field sends it).
    page.keyboard.press("g")
    expect(page.locator("#assign-to")).to_be_focused()
    page.keyboard.type("sam")
    page.keyboard.press("Enter")
    eventually_blocking(lambda: ticket(hub, assign)["assignee"] == "sam",
                        "the ticket to be assigned to sam", seconds=15, every=0.1)
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    pane_is(page, label)
    page.keyboard.press("l")
    page.keyboard.type("infra, nightly")
    page.keyboard.press("Enter")
    eventually_blocking(lambda: ticket(hub, label)["labels"] == ["infra", "nightly"],
                        "the labels to be set", seconds=15, every=0.1)

    # u: unread again (kept on the server: a reload still shows it unread).
    page.keyboard.press("Escape")
    expect(page.locator(f'.trow[data-id="{label}"]')).not_to_have_class(UNREAD)
    page.keyboard.press("u")
    expect(page.locator(f'.trow[data-id="{label}"]')).to_have_class(UNREAD)
    page.goto(f"{hub.url}/triage")
    expect(page.locator(f'.trow[data-id="{label}"]')).to_have_class(UNREAD)

    # o: reopen a resolved ticket (in "All"); e: edit a proposal on the full page; ?: keys.
    page.goto(f"{hub.url}/triage?view=all&open={approve}")
    pane_is(page, approve)
    page.keyboard.press("o")
    eventually_blocking(lambda: ticket(hub, approve)["status"] == "open",
                        "the ticket to be reopened", seconds=15, every=0.1)
    page.keyboard.press("?")
    expect(page.locator("#help")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#help")).to_be_hidden()
    page.goto(f"{hub.url}/triage?open={approve}")
    pane_is(page, approve)
    page.keyboard.press("e")
    page.wait_for_url(f"{hub.url}/t/{approve}#answer")
    page.context.close()


def test_bulk_select_is_one_decision_each(hub: LiveHub, chromium: Any) -> None:
    from playwright.sync_api import expect

    ids = [ask(hub, f"Refund order {n}?", "approval", proposal={"order": n},
               labels=["bulk"]) for n in range(3)]
    page = new_page(chromium, hub, "/triage?label=bulk")
    pane_is(page, ids[2])
    page.keyboard.press(" ")  # selects the current row
    page.keyboard.press("j")
    page.keyboard.press(" ")
    page.locator(f'.trow[data-id="{ids[0]}"] .pick').check()
    expect(page.locator("#picked")).to_have_text("3 selected")
    page.get_by_role("button", name="Approve selected").click()
    expect(page.locator("#toast")).to_contain_text("Approved 3 tickets.")
    for ticket_id in ids:
        eventually_blocking(lambda t=ticket_id: ticket(hub, t)["status"] == "approved",
                            f"#{ticket_id} to be approved", seconds=15, every=0.1)
        with hub.api() as api:
            events = api.get(f"/api/v1/events?ticket_id={ticket_id}").json()["items"]
        assert [(e["type"], e["data"].get("to")) for e in events].count(
            ("ticket.answered", "approved")) == 1
    expect(page.locator(".trow")).to_have_count(0)
    page.context.close()


def test_a_refused_action_says_why_and_comes_back(hub: LiveHub, chromium: Any) -> None:
    """The hub refuses an action (decided elsewhere since the pane opened): triage.js
    reads the problem+json and shows its detail; the row is back in the list."""
    from playwright.sync_api import expect

    gone = ask(hub, "Decided elsewhere?", "approval", proposal={"n": 1},
               labels=["refused"])
    page = new_page(chromium, hub, "/triage?label=refused")
    pane_is(page, gone)
    with hub.api() as api:
        assert api.post(f"/api/v1/tickets/{gone}/deny", json={"reason": "no"}).is_success
        detail = api.post(f"/api/v1/tickets/{gone}/approve",
                          json={"version": 1}).json()["detail"]  # what the hub says to it
    page.keyboard.press("a")
    expect(page.locator("#toast")).to_contain_text(f"Not sent: {detail}", timeout=10_000)
    expect(page.locator(f'.trow[data-id="{gone}"]')).to_be_visible()
    assert ticket(hub, gone)["status"] == "denied"
    page.context.close()


def test_a_preview_after_the_session_ended_says_so_instead_of_showing_the_sign_in_page(
        hub: LiveHub, chromium: Any) -> None:
    from playwright.sync_api import expect

    question = ask(hub, "Preview after sign-out?")
    page = new_page(chromium, hub, f"/t/{question}")
    page.fill("#text", "**bold**")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#preview strong")).to_have_text("bold")
    page.context.clear_cookies()  # the session is gone (signed out elsewhere, expired)
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#preview")).to_contain_text("No preview: ", timeout=10_000)
    expect(page.locator("#preview")).to_contain_text("sign in")
    assert page.locator("#preview input[type=password]").count() == 0
    page.context.close()


def test_phone_width_is_one_column_with_a_filter_sheet(hub: LiveHub, chromium: Any
                                                       ) -> None:
    from playwright.sync_api import expect

    first = ask(hub, "Approve the phone plan?", "approval", proposal={"plan": "basic"},
                labels=["phone"])
    for n in range(4):
        ask(hub, f"Question {n} from the phone agent", labels=["phone"])
    page = new_page(chromium, hub, "/triage", viewport={"width": 390, "height": 844},
                    is_mobile=True, has_touch=True)
    rows = page.locator(".trow")
    expect(rows.first).to_be_visible()
    assert rows.first.bounding_box()["y"] < 260  # the list starts near the top
    expect(page.locator("#pane")).to_be_hidden()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=SHOTS / "triage-phone.png")
    page.get_by_text("Filters").click()
    sheet = page.locator(".sheet-body")
    expect(sheet).to_be_visible()
    box = sheet.bounding_box()
    assert box["y"] + box["height"] >= 843  # a sheet from the bottom edge
    page.screenshot(path=SHOTS / "triage-phone-filters.png")
    page.get_by_text("Filters").click()
    page.locator(f'.trow[data-id="{first}"] a.ttitle').click()
    pane_is(page, first)
    expect(page.locator("#pane")).to_be_visible()
    expect(page.locator(".triage-list")).to_be_hidden()
    page.screenshot(path=SHOTS / "triage-phone-ticket.png")
    page.get_by_role("link", name="← List").click()
    expect(page.locator(".triage-list")).to_be_visible()
    page.context.close()


def test_without_javascript_every_action_is_a_form(hub: LiveHub, chromium: Any) -> None:
    from playwright.sync_api import expect

    one = ask(hub, "No-JS approval", "approval", proposal={"a": 1}, labels=["nojs"])
    two = ask(hub, "No-JS question", labels=["nojs"])
    tasks = [ask(hub, f"No-JS task {n}", "task", labels=["nojs"]) for n in range(2)]
    page = new_page(chromium, hub, "/triage?label=nojs", java_script_enabled=False)
    page.locator(f'.trow[data-id="{one}"] a.ttitle').click()
    pane_is(page, one)
    page.locator("#deny-reason").fill("")
    page.get_by_role("button", name="Deny").click()
    expect(page.locator("#err-deny")).to_have_text("Say why, so the agent can do better.")
    page.locator("#do-approve").click()
    expect(page.locator("#notice")).to_have_text(f"Approved #{one}.")
    pane_is(page, two)  # moved to the next
    assert ticket(hub, one)["status"] == "approved"
    page.locator("#comment-body").fill("Do you mean prod?")
    page.get_by_role("button", name="Comment").click()
    expect(page.locator("#notice")).to_have_text(f"Commented on #{two}.")
    page.locator("#snooze-for").select_option("1d")
    page.get_by_role("button", name="Snooze").click()
    assert ticket(hub, two)["status"] == "deferred"
    for ticket_id in tasks:
        page.locator(f'.trow[data-id="{ticket_id}"] .pick').check()
    page.get_by_role("button", name="Done selected").click()
    expect(page.locator("#notice")).to_have_text("Marked done: 2 tickets.")
    assert [ticket(hub, t)["status"] for t in tasks] == ["done", "done"]
    page.context.close()


def test_no_serious_accessibility_violations(hub: LiveHub, chromium: Any) -> None:
    approval = ask(hub, "Scale the web tier?", "approval",
                   proposal={"tool": "scale", "arguments": {"replicas": 6}},
                   labels=["infra"], due_at="2099-01-01T00:00:00Z")
    question = ask(hub, "Which **database**?", body="We need it today.")
    page = new_page(chromium, hub, "/triage", bypass_csp=True)  # axe is injected inline
    found = {}
    for path in ("/triage", f"/triage?open={question}", "/", f"/t/{approval}",
                 f"/t/{question}"):
        page.goto(hub.url + path)
        found[path] = serious_violations(page)
    phone = new_page(chromium, hub, f"/triage?open={approval}", bypass_csp=True,
                     viewport={"width": 390, "height": 844}, is_mobile=True)
    found["phone /triage"] = serious_violations(phone)
    assert {k: v for k, v in found.items() if v} == {}
    # The check can fail: a button without a name is a critical violation.
    page.evaluate("document.querySelector('main').append(document.createElement('button'))")
    assert "button-name" in [v["id"] for v in serious_violations(page)]
    page.context.close()
    phone.context.close()
