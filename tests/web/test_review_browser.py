"""Approval review, forms and live updates in a real browser (Debian's Chromium driven by
Playwright) against a real hub (uvicorn subprocess), with an agent on the Python SDK;
the no-JavaScript path runs in a context with JavaScript switched off."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from tests.conftest import LIVE_TIMEOUT, require_server
from tests.web.live_server import LiveHub, live_hub
from tests.web.test_browser import CHROMIUM, FLAGS, SHOTS, in_thread, sign_in
from tickethub.domain.actors import Role
from tickethub.sdk import Hub

pytestmark = pytest.mark.slow

SCALE = {"type": "object", "required": ["replicas", "region"], "properties": {
    "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
    "region": {"enum": ["eu", "us"]},
    "reason": {"type": "string", "maxLength": 200}}}
FORM = {"type": "object", "required": ["email", "region", "replicas", "confirm"],
        "properties": {
            "email": {"type": "string", "title": "Email", "pattern": "^[^@]+@[^@]+$"},
            "region": {"enum": ["eu", "us"]},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
            "confirm": {"type": "boolean", "title": "Confirm the change"}}}
LONG = "\n\n".join(f"Step {n}: check the dashboards, then the error budget." for n in range(60))


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveHub]:
    require_server("Chromium", CHROMIUM.exists())
    pytest.importorskip("playwright")
    with live_hub(tmp_path_factory.mktemp("hub"),
                  {"pat": Role.RESPONDER, "sam": Role.RESPONDER}) as live:
        yield live


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def agent(hub: LiveHub) -> Iterator[Hub]:
    client = Hub(hub.url, hub.agent_token)
    yield client
    client.close()


def signed_in_page(chromium: Any, hub: LiveHub, name: str, path: str, *,
                   javascript: bool = True, height: int = 800) -> Any:
    context = chromium.new_context(viewport={"width": 1100, "height": height},
                                   java_script_enabled=javascript)
    page = context.new_page()
    sign_in(page, hub, name, path)
    return page


def test_approval_review_as_an_editable_diff(hub: LiveHub, chromium: Any, agent: Hub) -> None:
    from playwright.sync_api import expect

    approval = agent.ask("Scale the web tier?", kind="approval", body=LONG,
                         response_schema=SCALE, proposal={"replicas": 4, "region": "eu"})
    page = signed_in_page(chromium, hub, "pat", f"/t/{approval.id}")
    # The decision bar is on the first screen although the form is far below.
    bar = page.locator("#decision-bar")
    box = bar.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 800, box
    expect(page.get_by_role("button", name="Approve", exact=True)).to_be_in_viewport()
    expect(page.locator("#changes")).to_have_text("No changes: approving as proposed.")
    assert page.locator("#answer").bounding_box()["y"] > 800  # type: ignore[index]

    # On a phone too: nothing wider than the screen, the bar on the first screen.
    phone = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    phone.add_cookies(page.context.cookies())
    small = phone.new_page()
    small.goto(f"{hub.url}/t/{approval.id}")
    expect(small.locator("#deny-button")).to_be_in_viewport()
    assert small.evaluate("document.documentElement.scrollWidth") <= 390
    small.get_by_label("Replicas").fill("5")
    expect(small.locator("#changes")).to_have_text("Changes: replicas 4 → 5")
    small.screenshot(path=SHOTS / "approval-review-phone.png")
    phone.close()

    page.get_by_label("Replicas").fill("6")
    replicas = page.locator('[data-field="f.replicas"]')
    expect(replicas).to_have_class(re.compile(r"\bchanged\b"))
    expect(replicas.locator(".was-note")).to_have_text(" was 4")
    expect(page.locator('[data-field="f.region"]')).not_to_have_class(re.compile("changed"))
    expect(page.locator("#changes")).to_have_text("Changes: replicas 4 → 6")
    expect(page.get_by_role("button", name="Approve with changes")).to_have_class(
        re.compile(r"\bprimary\b"))
    page.screenshot(path=SHOTS / "approval-review.png")
    # "Approve" means the proposal as it is: with changes made it asks first.
    page.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator("#changes")).to_contain_text("You changed replicas 4 → 6.")
    assert page.url == f"{hub.url}/t/{approval.id}"

    waiter, waited = in_thread(lambda: agent.wait(approval.id, timeout=60))
    page.get_by_role("button", name="Approve with changes").click()
    expect(page.locator("#notice")).to_have_text("Approved with changes: replicas 4 → 6.")
    expect(page.locator(".banner:visible, .notice:visible")).to_have_count(1)
    expect(page.locator("dl.version")).to_contain_text("replicas6 was 4")
    expect(page.locator("#messages .change-line")).to_have_text(
        "approved with changes: replicas 4 → 6")
    expect(page.locator("#messages pre.data")).to_have_count(0)
    page.locator("#answer-h").scroll_into_view_if_needed()
    page.screenshot(path=SHOTS / "approval-approved-with-changes.png")
    waiter.join(30)
    assert waited["value"].answer.data == {"replicas": 6, "region": "eu"}

    # Deny needs a reason, whatever the fields say; the bar's Deny sends it.
    other = agent.ask("Scale down?", kind="approval", response_schema=SCALE,
                      proposal={"replicas": 2, "region": "us"})
    page.goto(f"{hub.url}/t/{other.id}")
    page.get_by_label("Replicas").fill("")
    page.get_by_role("button", name="Deny").click()
    expect(page.locator("#comment-error")).to_have_text(
        "Say why you deny it, so the agent can do better.")
    expect(page.locator("#comment")).to_be_focused()
    page.keyboard.type("Traffic is still high.")
    page.get_by_role("button", name="Deny").click()
    expect(page.locator("#live-banner, #notice").filter(has_text="Denied")).to_have_count(1)
    assert agent.get(other.id).status == "denied"

    # Decided elsewhere while the page is open: the bar's buttons are switched off too.
    third = agent.ask("Scale up?", kind="approval", response_schema=SCALE,
                      proposal={"replicas": 3, "region": "us"})
    page.goto(f"{hub.url}/t/{third.id}")
    expect(page.locator("#approve-button")).to_be_enabled()
    decided = hub.api().post(f"/api/v1/tickets/{third.id}/approve",
                             json={"edited": {"replicas": 5, "region": "us"}})
    assert decided.status_code == 200, decided.text
    expect(page.locator("#live-banner")).to_have_text(
        "This ticket is approved by admin via api.", timeout=10_000)
    for button in ("#approve-button", "#approve-edited-button", "#deny-button"):
        expect(page.locator(button)).to_be_disabled()
    expect(page.locator("#messages .change-line")).to_have_text(
        "approved with changes: replicas 3 → 5")


def test_forms_say_everything_at_once_without_eating_the_click(
        hub: LiveHub, chromium: Any, agent: Hub) -> None:
    from playwright.sync_api import expect

    ticket = agent.ask("Who gets the report?", response_schema=FORM)
    page = signed_in_page(chromium, hub, "pat", f"/t/{ticket.id}")
    expect(page.locator("#f-replicas-limits")).to_have_text("Whole number from 1 to 10.")
    expect(page.locator("#f-email-limits")).to_have_text("Like name@example.org.")
    expect(page.locator('input[name="f.confirm"][type="radio"]')).to_have_count(2)
    expect(page.locator('input[name="f.confirm"]:checked')).to_have_count(0)

    page.evaluate("""() => { window.submits = 0; document.getElementById('answer-form')
        .addEventListener('submit', () => { window.submits += 1; }); }""")
    page.get_by_label("Email").fill("nope")  # focus stays here: the click blurs it
    send = page.get_by_role("button", name="Send answer")
    send.click()
    assert page.evaluate("window.submits") == 1  # the first click counts
    summary = page.locator("[data-summary] li")
    expect(summary).to_have_text([
        "Email must look like name@example.org.", "Region is required.",
        "Replicas is required.", "Confirm the change: choose yes or no."])
    expect(page.get_by_label("Email")).to_be_focused()
    page.screenshot(path=SHOTS / "form-errors.png", full_page=True)

    page.get_by_label("Email").fill("ops@example.org")
    expect(page.locator("#f-email-error")).to_have_text("")  # cleared while fixing it
    page.get_by_label("Region").select_option("us")
    page.get_by_label("Replicas").fill("3")
    page.get_by_label("No", exact=True).check()
    waiter, waited = in_thread(lambda: agent.wait(ticket.id, timeout=60))
    send.click()
    expect(page.locator("#notice")).to_have_text("Answer sent.")
    waiter.join(30)
    assert waited["value"].answer.data == {"email": "ops@example.org", "region": "us",
                                           "replicas": 3, "confirm": False}


def test_without_javascript_the_server_says_everything_at_once(
        hub: LiveHub, chromium: Any, agent: Hub) -> None:
    from playwright.sync_api import expect

    ticket = agent.ask("Who gets the report?", response_schema=FORM)
    page = signed_in_page(chromium, hub, "sam", f"/t/{ticket.id}", javascript=False)
    page.get_by_label("Email").fill("nope")
    page.get_by_label("Replicas").fill("50")
    page.get_by_role("button", name="Send answer").click()
    expect(page.locator("[data-summary] li")).to_have_text([
        "Email must look like name@example.org.", "Region is required.",
        "Replicas must be from 1 to 10.", "Confirm the change: choose yes or no."])
    expect(page.locator("#f-replicas-error")).to_have_text("Replicas must be from 1 to 10.")
    expect(page.get_by_label("Email")).to_have_value("nope")
    page.screenshot(path=SHOTS / "form-errors-no-js.png", full_page=True)

    approval = agent.ask("Scale?", kind="approval", response_schema=SCALE,
                         proposal={"replicas": 4, "region": "eu"})
    page.goto(f"{hub.url}/t/{approval.id}")
    page.get_by_label("Replicas").fill("5")
    page.get_by_role("button", name="Approve with changes").click()
    expect(page.locator("#notice")).to_have_text("Approved with changes: replicas 4 → 5.")
    assert agent.get(approval.id).answer.data == {"replicas": 5, "region": "eu"}


def test_live_rows_in_sort_order_search_scope_and_session_end(
        hub: LiveHub, chromium: Any, agent: Hub) -> None:
    from playwright.sync_api import expect

    soon = agent.ask("Due in a minute", due_at=timedelta(minutes=1))
    later = agent.ask("Due in an hour", due_at=timedelta(hours=1))
    page = signed_in_page(chromium, hub, "pat", "/?sort=urgent")
    ids = page.locator(".rows > .row")
    first = ids.evaluate_all("rows => rows.map(r => Number(r.dataset.id))")
    assert first.index(soon.id) < first.index(later.id)
    undated = agent.ask("No deadline at all")
    expect(page.locator(f'.row[data-id="{undated.id}"]')).to_be_visible(timeout=10_000)
    urgent = agent.ask("Due in 30 seconds", due_at=timedelta(seconds=30))
    expect(page.locator(f'.row[data-id="{urgent.id}"]')).to_be_visible(timeout=10_000)
    order = ids.evaluate_all("rows => rows.map(r => Number(r.dataset.id))")
    assert order.index(urgent.id) < order.index(soon.id) < order.index(later.id) \
        < order.index(undated.id), order

    # A search says it covered one view and offers the others.
    mine = agent.ask("Invoice 77 for pat", assignee="pat")
    agent.ask("Invoice 78")
    page.goto(f"{hub.url}/?view=me&q=Invoice")
    scope = page.locator("#search-scope")
    expect(scope).to_contain_text("in Waiting on me only.")
    scope.get_by_role("link", name=re.compile("in All tickets")).click()
    expect(page.locator(".rows > .row")).to_have_count(2)
    assert f"/t/{mine.id}" in page.content()

    # Signing out in another tab: this tab says so at once (same browser) ...
    page.goto(f"{hub.url}/")
    other_tab = page.context.new_page()
    other_tab.goto(f"{hub.url}/t/{soon.id}")
    page.get_by_role("button", name="Sign out").click()
    banner = other_tab.locator("#session-ended")
    expect(banner).to_contain_text("Your session ended — sign in again", timeout=10_000)
    expect(banner.get_by_role("link", name="sign in again")).to_have_attribute(
        "href", f"/login?next=%2Ft%2F{soon.id}")
    other_tab.screenshot(path=SHOTS / "session-ended.png")

    # ... and a session ended elsewhere (another device) ends the stream with a notice.
    sam = signed_in_page(chromium, hub, "sam", "/")
    cookies = {c["name"]: c["value"] for c in sam.context.cookies()}
    with httpx.Client(base_url=hub.url, cookies=cookies, timeout=LIVE_TIMEOUT) as elsewhere:
        csrf = re.search(r'<meta name="csrf" content="([^"]+)">',
                         elsewhere.get("/").text).group(1)  # type: ignore[union-attr]
        assert elsewhere.post("/logout", data={"csrf": csrf}).status_code == 303
    expect(sam.locator("#session-ended")).to_be_visible(timeout=15_000)
