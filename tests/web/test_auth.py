"""Sign-in, sessions, sign-out and CSRF for the web inbox."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from tests.conftest import ADMIN_TOKEN
from tests.web.conftest import PASSWORD, Browser, ask, csrf_of, sign_in
from tickethub.api.app import create_app
from tickethub.cli.main import cli
from tickethub.domain.actors import Role
from tickethub.errors import Conflict, NotFound, Unauthenticated, ValidationFailed
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings
from tickethub.testing import FakeClock
from tickethub.web.session import safe_next


async def test_pages_need_sign_in_and_remember_where_you_were(client: httpx.AsyncClient
                                                               ) -> None:
    for path, expected in [("/", "/login?next=/"), ("/t/7", "/login?next=/t/7"),
                           ("/?view=me", "/login?next=/%3Fview%3Dme"),
                           ("/tree/3", "/login?next=/tree/3")]:
        response = await client.get(path)
        assert response.status_code == 303
        assert response.headers["location"] == expected


async def test_sign_in_sets_a_secure_session_cookie(client: httpx.AsyncClient,
                                                    person: str) -> None:
    response = await sign_in(client, person, next_path="/t/1")
    assert response.status_code == 303
    assert response.headers["location"] == "/t/1"
    cookie = next(c for c in response.headers.get_list("set-cookie")
                  if c.startswith("th_session="))
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/" in cookie
    assert "Secure" not in cookie  # the public URL here is http://
    page = await client.get("/")
    assert page.status_code == 200 and "Signed in as <strong>pat</strong>" in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'self'")


@pytest.mark.parametrize("password", ["wrong password", ""])
async def test_wrong_password_and_unknown_name_look_the_same(client: httpx.AsyncClient,
                                                            person: str, password: str
                                                            ) -> None:
    wrong = await sign_in(client, person, password)
    unknown = await sign_in(client, "nobody", PASSWORD)
    for response in (wrong, unknown):
        assert response.status_code == 401
        assert "wrong username or password" in response.text
        assert "th_session=" not in response.headers.get("set-cookie", "")
    assert (await client.get("/")).status_code == 303


async def test_sign_in_without_the_form_token_is_refused(client: httpx.AsyncClient,
                                                         person: str) -> None:
    await client.get("/login")  # sets the login CSRF cookie
    response = await client.post("/login", data={"username": person, "password": PASSWORD})
    assert response.status_code == 403
    response = await client.post("/login", data={"csrf": "forged", "username": person,
                                                 "password": PASSWORD})
    assert response.status_code == 403
    assert (await client.get("/")).status_code == 303


@pytest.mark.parametrize("target", ["//evil.example/x", "https://evil.example/",
                                    "javascript:alert(1)", "/\\evil.example"])
def test_next_only_goes_to_local_pages(target: str) -> None:
    assert safe_next(target) == "/"
    assert safe_next("/t/5?x=1") == "/t/5?x=1"


async def test_sign_out_ends_the_session(pat: Browser) -> None:
    refused = await pat.post("/logout", {}, csrf=False)
    assert refused.status_code == 403
    response = await pat.post("/logout", {})
    assert response.status_code == 303 and response.headers["location"] == "/login"
    # Even with the old cookie replayed, the session is gone on the server.
    assert (await pat.get("/")).status_code == 303


async def test_cookie_is_secure_behind_https(tmp_path: Path, database_url: str) -> None:
    settings = Settings(data_dir=tmp_path / "d", database_url=database_url,
                        admin_token=ADMIN_TOKEN, public_url="https://hub.example")
    hub = HubRuntime(settings)
    hub.sessions.set_password("pat", PASSWORD)
    app = create_app(hub)
    async with hub.running():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="https://hub.example") as c:
            response = await sign_in(c, "pat")
    hub.close()
    cookie = next(c for c in response.headers.get_list("set-cookie")
                  if c.startswith("th_session="))
    assert "Secure" in cookie and "HttpOnly" in cookie


async def test_expired_session_signs_in_again_and_returns_to_the_page(
        clocked: tuple[httpx.AsyncClient, FakeClock, HubRuntime]) -> None:
    client, clock, _ = clocked
    ticket = await ask(client, {"Authorization": f"Bearer {ADMIN_TOKEN}"}, title="Ship it?")
    await sign_in(client, "pat")
    page = await client.get(f"/t/{ticket['id']}")
    assert page.status_code == 200
    csrf = csrf_of(page.text)
    clock.advance(seconds=3601)
    expired = await client.get(f"/t/{ticket['id']}")
    assert expired.status_code == 303
    assert expired.headers["location"] == f"/login?next=/t/{ticket['id']}"
    # A form posted with the expired session is not applied and goes the same way.
    post = await client.post(f"/t/{ticket['id']}/answer", data={"csrf": csrf, "text": "yes"})
    assert post.status_code == 303
    assert post.headers["location"] == f"/login?next=/t/{ticket['id']}"
    again = await sign_in(client, "pat", next_path=f"/t/{ticket['id']}")
    assert again.headers["location"] == f"/t/{ticket['id']}"
    page = await client.get(again.headers["location"])
    assert page.status_code == 200 and "Ship it?" in page.text
    assert "Answer sent" not in page.text and 'id="answer-form"' in page.text


async def test_an_active_session_is_renewed(
        clocked: tuple[httpx.AsyncClient, FakeClock, HubRuntime]) -> None:
    client, clock, hub = clocked
    response = await sign_in(client, "pat")
    token = response.cookies["th_session"]
    first = hub.sessions.resume(token)
    assert first is not None
    clock.advance(seconds=2000)  # more than half of the hour used: renewed
    renewed = hub.sessions.resume(token)
    assert renewed is not None and renewed.expires_at > first.expires_at
    clock.advance(seconds=2000)  # past the first expiry, inside the renewed one
    assert (await client.get("/")).status_code == 200


def test_passwords_are_checked_and_agents_cannot_sign_in(runtime: HubRuntime) -> None:
    with pytest.raises(ValidationFailed) as short:
        runtime.sessions.set_password("pat", "short")
    assert short.value.field == "password"
    with pytest.raises(ValidationFailed) as bad_name:
        runtime.sessions.set_password("pat smith", PASSWORD)
    assert bad_name.value.field == "name"
    runtime.sessions.set_password("pat", PASSWORD, Role.ADMIN)
    again = runtime.sessions.set_password("pat", "another password", Role.AGENT)
    assert again.role is Role.ADMIN  # an existing person keeps their role
    with pytest.raises(Unauthenticated):
        runtime.sessions.sign_in("pat", PASSWORD)
    runtime.sessions.sign_in("pat", "another password")
    runtime.auth.bootstrap_admin(ADMIN_TOKEN)
    runtime.auth.create_token(runtime.auth.authenticate(ADMIN_TOKEN), "bot", Role.AGENT)
    with pytest.raises(Conflict):
        runtime.sessions.set_password("bot", PASSWORD)


def test_cli_sets_a_password(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["user", "set-password", "robin", "--password-stdin",
                                 "--data-dir", str(tmp_path)], input=PASSWORD + "\n")
    assert result.exit_code == 0, result.output
    assert "robin (responder) can now sign in" in result.output
    short = runner.invoke(cli, ["user", "set-password", "robin", "--password-stdin",
                                "--data-dir", str(tmp_path)], input="short\n")
    assert short.exit_code == 6
    hub = HubRuntime(Settings(data_dir=tmp_path))
    try:
        session, _ = hub.sessions.sign_in("robin", PASSWORD)
        assert session.actor.role is Role.RESPONDER
    finally:
        hub.close()


async def login_with_link(client: httpx.AsyncClient, url: str) -> httpx.Response:
    page = await client.get(url)
    assert page.status_code == 200 and "Sign in with a link" in page.text
    fields = dict(re.findall(r'name="(csrf|token|next)" value="([^"]*)"', page.text))
    return await client.post("/login/link", data=fields)


async def test_a_login_link_works_once_and_returns_to_its_page(
        client: httpx.AsyncClient, runtime: HubRuntime, person: str) -> None:
    token = runtime.sessions.login_link(person, 600)
    url = f"/login/link?token={token}&next=/t/3"
    fetched_twice = await client.get(url)  # a mail scanner fetching it spends nothing
    assert fetched_twice.status_code == 200
    response = await login_with_link(client, url)
    assert response.status_code == 303 and response.headers["location"] == "/t/3"
    assert "th_session=" in response.headers["set-cookie"]
    assert (await client.get("/")).status_code == 200
    client.cookies.clear()
    again = await login_with_link(client, url)
    assert again.status_code == 401 and "unknown, used or expired" in again.text
    assert (await client.get("/")).status_code == 303


async def test_login_links_expire_and_need_the_form_token(
        clocked: tuple[httpx.AsyncClient, FakeClock, HubRuntime]) -> None:
    client, clock, hub = clocked
    token = hub.sessions.login_link("pat", 300)
    await client.get(f"/login/link?token={token}")
    forged = await client.post("/login/link", data={"token": token})
    assert forged.status_code == 403
    clock.advance(seconds=301)
    late = await login_with_link(client, f"/login/link?token={token}")
    assert late.status_code == 401
    with pytest.raises(NotFound):
        hub.sessions.login_link("nobody")
    with pytest.raises(ValidationFailed):
        hub.sessions.login_link("pat", 5)


def test_cli_prints_a_login_link(tmp_path: Path) -> None:
    runner = CliRunner()
    made = runner.invoke(cli, ["user", "set-password", "robin", "--password-stdin",
                               "--data-dir", str(tmp_path)], input=PASSWORD + "\n")
    assert made.exit_code == 0
    result = runner.invoke(cli, ["user", "login-link", "robin", "--next", "/t/9",
                                 "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert re.match(r"^http://127\.0\.0\.1:8080/login/link\?token=\S+&next=%2Ft%2F9$",
                    result.output.strip())
    missing = runner.invoke(cli, ["user", "login-link", "nobody", "--data-dir", str(tmp_path)])
    assert missing.exit_code == 3
