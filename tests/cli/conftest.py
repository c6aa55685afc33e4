"""A real hub in a child process for the CLI tests, and a runner that invokes the
``tickethub`` command line in-process (click's CliRunner) against it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from click.testing import CliRunner, Result

from tickethub.cli.main import cli
from tickethub.sdk import Hub
from tickethub.sdk.testing import HubProcess

ADMIN_TOKEN = "th_admin_cli_" + "c" * 36

Run = Callable[..., Result]


@pytest.fixture(scope="package")
def hub_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubProcess]:
    with HubProcess(tmp_path_factory.mktemp("cli") / "hub", admin_token=ADMIN_TOKEN) as p:
        yield p


@pytest.fixture
def admin(hub_process: HubProcess) -> Iterator[Hub]:
    with Hub(hub_process.url, ADMIN_TOKEN) as hub:
        yield hub


@pytest.fixture(scope="package")
def responder_token(hub_process: HubProcess) -> str:
    with Hub(hub_process.url, ADMIN_TOKEN) as hub:
        return hub.create_token("responder", "cli-alice")


@pytest.fixture
def run(hub_process: HubProcess) -> Run:
    """``run("ask", "title", token=...)``: the CLI with TICKETHUB_URL/TOKEN set."""

    def invoke(*args: str, token: str = ADMIN_TOKEN, url: str | None = None,
               input: str | None = None) -> Result:
        env = {"TICKETHUB_URL": url or hub_process.url, "TICKETHUB_TOKEN": token}
        return CliRunner().invoke(cli, list(args), env=env, input=input,
                                  catch_exceptions=False)

    return invoke
