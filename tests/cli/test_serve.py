"""``tickethub serve`` as an operator runs it: it stops promptly on SIGTERM and Ctrl-C
even while browsers, ``watch`` streams and long-polls are connected."""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from tests.conftest import LIVE_TIMEOUT
from tickethub.cli.main import cli
from tickethub.sdk.testing import free_port, hub_command
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings

ADMIN_TOKEN = "th_admin_serve_" + "s" * 34
PASSWORD = "correct horse battery"


def _default_sigint() -> None:
    # As a terminal's foreground job gets it, even when this suite runs in the background.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _hub_env(admin_token: str | None = ADMIN_TOKEN) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKETHUB_")}
    env["TICKETHUB_LOG_LEVEL"] = "info"
    return {**env, "TICKETHUB_ADMIN_TOKEN": admin_token} if admin_token else env


def _serve(data_dir: Path, port: int, admin_token: str | None = ADMIN_TOKEN
           ) -> subprocess.Popen[str]:
    data_dir.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [*hub_command(), "serve", "--port", str(port), "--data-dir", str(data_dir)],
        env=_hub_env(admin_token), cwd=data_dir, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)


def _start(data_dir: Path, port: int, admin_token: str | None = ADMIN_TOKEN
           ) -> subprocess.Popen[str]:
    process = _serve(data_dir, port, admin_token)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError(f"the hub did not start: {process.communicate()}")


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "hub"
    hub = HubRuntime(Settings(data_dir=path))
    hub.sessions.set_password("pat", PASSWORD)
    hub.close()
    yield path


def _open_stream(stack: ExitStack, client: httpx.Client, url: str, **kw: object) -> None:
    response = stack.enter_context(client.stream("GET", url, **kw))  # type: ignore[arg-type]
    assert response.status_code == 200
    assert next(response.iter_text()).startswith("retry:")


@pytest.mark.parametrize("signals", [[signal.SIGTERM], [signal.SIGINT],
                                     [signal.SIGINT, signal.SIGINT]],
                         ids=["SIGTERM", "Ctrl-C", "Ctrl-C twice"])
def test_serve_stops_promptly_with_streams_and_long_polls_open(
        data_dir: Path, signals: list[signal.Signals]) -> None:
    sig = signals[0]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    process = _start(data_dir, port)
    waited: list[httpx.Response] = []
    try:
        with ExitStack() as stack:
            api = stack.enter_context(httpx.Client(base_url=url, headers=auth, timeout=90))
            ticket = api.post("/api/v1/tickets", json={"title": "Ship it?"}).json()
            # A browser with the inbox open, as the page's EventSource does.
            browser = stack.enter_context(httpx.Client(base_url=url, timeout=90))
            form = browser.get("/login").text
            csrf = re.search(r'name="csrf" value="([^"]+)"', form)
            assert csrf
            signed_in = browser.post("/login", data={"csrf": csrf.group(1), "username": "pat",
                                                     "password": PASSWORD})
            assert signed_in.status_code == 303
            _open_stream(stack, browser, "/inbox/stream")
            # `tickethub watch` and an agent's long-poll.
            _open_stream(stack, api, "/api/v1/events/stream")
            poll = threading.Thread(target=lambda: waited.append(
                api.get(f"/api/v1/tickets/{ticket['id']}/wait", params={"timeout": 60})))
            poll.start()
            deadline = time.monotonic() + 30
            while api.get("/healthz").json()["waiters"] < 1:
                assert time.monotonic() < deadline, "the long-poll never arrived"
                time.sleep(0.05)
            for each in signals:
                process.send_signal(each)
                time.sleep(0.05)
            try:  # a bound on a hang, not a speed test: the hub used to wait forever
                _, stderr = process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                pytest.fail(f"the hub still ran 30 s after {sig.name}: "
                            f"{process.communicate()[1][-2000:]}")
            poll.join(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert "Traceback" not in stderr and "Aborted" not in stderr, stderr
    assert process.returncode == (0 if sig == signal.SIGINT else -signal.SIGTERM)
    assert "Application shutdown complete" in stderr
    # The long-poll got an answer (the ticket as it is), not a dropped connection.
    assert [r.status_code for r in waited] == [200]
    assert waited[0].headers["x-tickethub-timed-out"] == "true"


def test_a_start_on_a_busy_port_keeps_the_generated_admin_token(tmp_path: Path) -> None:
    data_dir = tmp_path / "hub"
    port = free_port()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", port))
        busy.listen()
        failed = _serve(data_dir, port, admin_token=None)
        _, stderr = failed.communicate(timeout=60)
    assert failed.returncode != 0
    saved = data_dir.resolve() / "admin-token"
    assert f"generated the admin token; saved to {saved}" in stderr
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    token = saved.read_text().strip()
    assert token.startswith("th_") and token not in stderr

    process = _start(data_dir, port, admin_token=None)
    try:
        me = httpx.get(f"http://127.0.0.1:{port}/api/v1/me",
                       headers={"Authorization": f"Bearer {token}"}, timeout=LIVE_TIMEOUT)
        assert me.status_code == 200 and me.json()["role"] == "admin"
        # The operator's next step prints a link to where the hub really listens.
        made = CliRunner().invoke(cli, ["user", "set-password", "pat", "--password-stdin",
                                        "--data-dir", str(data_dir)], input=PASSWORD + "\n")
        assert made.exit_code == 0, made.output
        assert f"can now sign in at http://127.0.0.1:{port}/login" in made.output
    finally:
        process.terminate()
        _, banner = process.communicate(timeout=30)
    assert f"export TICKETHUB_TOKEN=$(cat {saved})" in banner


async def test_the_admin_token_setting_works_at_any_start(tmp_path: Path) -> None:
    first = HubRuntime(Settings(data_dir=tmp_path))
    async with first.running():
        generated = first.generated_admin_token
    first.close()
    assert generated and (tmp_path / "admin-token").read_text().strip() == generated
    later = HubRuntime(Settings(data_dir=tmp_path, admin_token=ADMIN_TOKEN))
    async with later.running():
        assert later.generated_admin_token is None
        assert later.auth.authenticate(ADMIN_TOKEN).role.value == "admin"
        assert later.auth.authenticate(generated).role.value == "admin"
    later.close()


def test_a_configured_port_beats_the_last_served_url(tmp_path: Path) -> None:
    (tmp_path / "served-url").write_text("http://127.0.0.1:7777\n")
    made = CliRunner().invoke(cli, ["user", "set-password", "pat", "--password-stdin",
                                    "--data-dir", str(tmp_path)], input=PASSWORD + "\n",
                              env={"TICKETHUB_PORT": "9123"})
    assert made.exit_code == 0, made.output
    assert "can now sign in at http://127.0.0.1:9123/login" in made.output


def test_serve_with_the_database_away_says_so_in_one_line(tmp_path: Path) -> None:
    """No traceback: one line naming ``database_unavailable``, exit 7 (unavailable)."""
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"TICKETHUB_DATABASE_URL": f"postgresql+psycopg://hub:x@127.0.0.1:{port}/hub",
           "TICKETHUB_DATA_DIR": str(tmp_path)}
    result = CliRunner().invoke(cli, ["serve"], env=env)
    assert result.exit_code == 7, result.output
    assert "database_unavailable" in result.output
    assert "Traceback" not in result.output
