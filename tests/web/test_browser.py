"""The web inbox in a real browser: Debian's Chromium driven by Playwright, against a
real hub (uvicorn subprocess), with an agent on the Python SDK.

Screenshots go to ``tests/web/screenshots/`` (git-ignored); the docs show copies.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_server
from tests.web.live_server import PASSWORD, LiveHub, live_hub
from tickethub.domain.actors import Role
from tickethub.sdk import Hub

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-dev-shm-usage"]
SHOTS = Path(__file__).with_name("screenshots")

pytestmark = pytest.mark.slow


@pytest.fixture
def hub(tmp_path: Path) -> Any:
    require_server("Chromium", CHROMIUM.exists())
    pytest.importorskip("playwright")
    with live_hub(tmp_path, {"pat": Role.RESPONDER, "sam": Role.RESPONDER}) as live:
        yield live


def sign_in(page: Any, hub: LiveHub, name: str, path: str = "/") -> None:
    page.goto(hub.url + path)
    assert "/login" in page.url  # sent to sign in first, then back here
    page.get_by_label("Username").fill(name)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(hub.url + path)


def in_thread(fn: Any) -> tuple[threading.Thread, dict[str, Any]]:
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = fn()
        except BaseException as exc:  # handed to the test
            result["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


def test_people_answer_agents_in_the_browser(hub: LiveHub) -> None:
    from playwright.sync_api import expect, sync_playwright

    SHOTS.mkdir(exist_ok=True)
    agent = Hub(hub.url, hub.agent_token)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=FLAGS)
        other_browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                          args=FLAGS)
        page = browser.new_page(viewport={"width": 1100, "height": 800})
        page.goto(hub.url + "/")
        page.screenshot(path=SHOTS / "login.png")
        sign_in(page, hub, "pat")
        expect(page.get_by_role("heading", name="Inbox")).to_be_visible()

        # An agent asks through the SDK; the ticket appears live, counted in the title.
        ticket = agent.ask("Which database for the staging cluster?",
                           body="We need it **today**. Options: `postgres`, `sqlite`.",
                           labels=["infra"], due_at=timedelta(minutes=12, seconds=30))
        row = page.locator(f'.row[data-id="{ticket.id}"]')
        expect(row).to_be_visible(timeout=10_000)
        expect(row).to_contain_text("in 12 min")
        expect(page).to_have_title("(1) Inbox · tickethub")
        page.screenshot(path=SHOTS / "inbox-live.png")

        # A second person has the same ticket open in another browser.
        other = other_browser.new_page()
        sign_in(other, hub, "sam", f"/t/{ticket.id}")
        expect(other.locator("#text")).to_be_enabled()

        # The agent waits; pat answers with the keyboard: j selects, a opens the answer box.
        waiter, waited = in_thread(lambda: agent.wait(ticket.id, timeout=60))
        page.keyboard.press("j")
        page.keyboard.press("a")
        page.wait_for_url(f"{hub.url}/t/{ticket.id}#answer")
        expect(page.locator("#text")).to_be_focused()
        page.keyboard.type("Use **postgres**. <script>alert('x')</script>")
        page.get_by_role("button", name="Preview").click()
        expect(page.locator("#preview strong")).to_have_text("postgres")
        expect(page.locator("#preview")).to_contain_text("<script>alert('x')</script>")
        page.screenshot(path=SHOTS / "ticket-question.png", full_page=True)
        page.get_by_role("button", name="Send answer").click()
        expect(page.locator("#notice")).to_have_text("Answer sent.")
        waiter.join(30)
        answered = waited["value"]
        assert answered.status == "answered"
        assert answered.answer.text.startswith("Use **postgres**.")
        assert answered.answer.via == "web" and answered.answer.by == "pat"

        # The second browser updates live and cannot answer twice.
        expect(other.locator("#live-banner")).to_have_text(
            "This ticket is answered by pat via web.", timeout=10_000)
        expect(other.locator("#text")).to_be_disabled()
        expect(other.locator("#messages")).to_contain_text("Use postgres.")
        expect(other.locator("#message-count")).to_have_text("1")
        expect(other.locator("#no-messages")).to_have_count(0)
        other.screenshot(path=SHOTS / "answered-elsewhere.png", full_page=True)

        # An approval, edited through its schema form: errors inline, then approved.
        schema = {"type": "object", "required": ["tool", "arguments"], "properties": {
            "tool": {"type": "string"},
            "arguments": {"type": "object", "required": ["amount", "currency"], "properties": {
                "amount": {"type": "integer", "maximum": 100, "multipleOf": 5,
                           "description": "In whole units; multiples of 5."},
                "currency": {"enum": ["EUR", "USD"]},
                "notify_customer": {"type": "boolean"}}}}}
        approval = agent.ask("Refund order 1042?", kind="approval", response_schema=schema,
                             proposal={"tool": "refund", "arguments": {
                                 "amount": 80, "currency": "EUR", "notify_customer": True}})
        waiter, waited = in_thread(lambda: agent.wait(approval.id, timeout=60))
        page.goto(f"{hub.url}/t/{approval.id}")
        expect(page.locator("code.tool")).to_have_text("refund")
        amount = page.get_by_label("Amount")
        amount.fill("500")
        page.get_by_role("button", name="Approve with changes").click()
        expect(page.locator("#f-arguments-amount-error")).to_have_text(
            "Amount must be at most 100.")
        expect(amount).to_have_attribute("aria-invalid", "true")
        page.screenshot(path=SHOTS / "approval-error.png", full_page=True)
        amount.fill("42")  # passes the page's checks; the server's schema check catches it
        page.get_by_role("button", name="Approve with changes").click()
        expect(page.locator("#f-arguments-amount-error")).to_contain_text("in steps of 5")
        expect(page.get_by_label("Amount")).to_have_value("42")
        page.get_by_label("Amount").fill("40")
        page.get_by_label("Currency").select_option("USD")
        page.get_by_role("button", name="Approve with changes").click()
        expect(page.locator("#notice")).to_have_text(
            "Approved with changes: arguments.amount 80 → 40; arguments.currency EUR → USD.")
        waiter.join(30)
        approved = waited["value"]
        assert approved.status == "approved"
        assert approved.answer.data == {"tool": "refund", "arguments": {
            "amount": 40, "currency": "USD", "notify_customer": True}}
        page.screenshot(path=SHOTS / "approval-approved.png", full_page=True)

        # A tree, and the inbox on a phone.
        root = agent.ask("Import the support mailbox", kind="task")
        for n, title in enumerate(["Invoice question", "Password reset", "Refund request"]):
            child = agent.ask(title, parent_id=root.id)
            if n == 0:
                agent.ask("Which invoice number?", parent_id=child.id)
            if n == 1:
                hub.api().post(f"/api/v1/tickets/{child.id}/answer", json={"text": "sent"})
        page.goto(f"{hub.url}/tree/{root.id}")
        expect(page.locator(".tree")).to_contain_text("4 below, 3 waiting")
        expect(page.locator(".node.st-answered")).to_contain_text("Password reset")
        page.get_by_role("button", name="Collapse all").click()
        expect(page.get_by_text("Password reset")).to_be_hidden()
        page.get_by_role("button", name="Expand all").click()
        expect(page.get_by_text("Password reset")).to_be_visible()
        page.screenshot(path=SHOTS / "tree.png", full_page=True)
        phone = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True)
        phone.context.add_cookies(page.context.cookies())
        phone.goto(hub.url + "/")
        expect(phone.locator(".row").first).to_be_visible()
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        phone.screenshot(path=SHOTS / "inbox-phone.png", full_page=True)

        browser.close()
        other_browser.close()
    agent.close()
