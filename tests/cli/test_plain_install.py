"""``make run`` installs the hub without extras (``pip install -e .``) and starts it on
SQLite: nothing on that path may need a package that only the ``postgres`` or ``dev``
extras bring. The suite itself runs with them installed, so these tests hide them from
the processes they start: a ``sitecustomize`` module first on their ``PYTHONPATH`` sets
``sys.modules[name] = None``, which makes ``import name`` fail.

Found on a fresh machine: ``serve`` imported ``psycopg`` (the PostgreSQL driver) for its
leader election, and ``make run`` stopped with ``ModuleNotFoundError``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import LIVE_TIMEOUT
from tickethub.errors import ValidationFailed
from tickethub.sdk.testing import HubProcess, hub_command
from tickethub.store.engine import make_engine

# Top-level modules of the packages only the extras install (pyproject.toml:
# ``postgres`` and ``dev``); none of the hub's own dependencies needs them.
EXTRAS_ONLY = ("psycopg", "psycopg_binary", "pytest", "openai", "aiosmtpd", "playwright",
               "schemathesis", "hatchling", "mypy")
# Modules that exist for PostgreSQL alone, imported only once a PostgreSQL URL is set.
POSTGRESQL_ONLY = {"tickethub.bus.postgres"}
ADMIN_TOKEN = "th_admin_plain_" + "p" * 34
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def plain_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a process that runs as on a plain install: the extras hidden,
    this checkout's code, no hub settings or database URL from the caller."""
    hide = tmp_path / "plain-install"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        f"import sys\nfor name in {EXTRAS_ONLY!r}:\n    sys.modules[name] = None\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TICKETHUB_") and k != "SQLALCHEMY_URL"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hide), str(SRC),
                                                      env.get("PYTHONPATH")]))
    return env


def test_every_module_imports_without_the_extras(plain_env: dict[str, str]) -> None:
    code = f"""
import importlib, pkgutil, tickethub
failed = []
for module in pkgutil.walk_packages(tickethub.__path__, "tickethub."):
    if module.name in {POSTGRESQL_ONLY!r}:
        continue
    try:
        importlib.import_module(module.name)
    except Exception as exc:
        failed.append(f"{{module.name}}: {{type(exc).__name__}}: {{exc}}")
print("\\n".join(failed))
"""
    done = subprocess.run([sys.executable, "-c", code], env=plain_env, capture_output=True,
                          text=True, timeout=300)
    assert done.stderr == "" and done.stdout.strip() == "", done.stdout + done.stderr


def test_serve_starts_and_answers_without_the_extras(tmp_path: Path,
                                                     plain_env: dict[str, str]) -> None:
    hub = HubProcess(tmp_path / "data", admin_token=ADMIN_TOKEN,
                     env={"PYTHONPATH": plain_env["PYTHONPATH"]})
    with hub:
        auth = {"authorization": f"Bearer {ADMIN_TOKEN}"}
        asked = httpx.post(hub.url + "/api/v1/tickets", headers=auth, timeout=LIVE_TIMEOUT,
                           json={"kind": "question", "title": "Ship it?"})
        assert asked.status_code == 201, asked.text
        listed = httpx.get(hub.url + "/api/v1/tickets", headers=auth, timeout=LIVE_TIMEOUT)
        assert [t["title"] for t in listed.json()["items"]] == ["Ship it?"]
    log = hub.log_tail(200)
    assert hub.returncode == -signal.SIGTERM, log  # a clean stop, as test_serve.py's
    assert "ModuleNotFoundError" not in log


def test_a_postgresql_url_without_its_driver_is_one_clear_line(
        tmp_path: Path, plain_env: dict[str, str]) -> None:
    """A plain install pointed at PostgreSQL: exit 6 (invalid) and one line saying what
    to install, not a traceback from SQLAlchemy's driver import."""
    done = subprocess.run([*hub_command(), "serve"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={
                              **plain_env, "TICKETHUB_DATA_DIR": str(tmp_path),
                              "TICKETHUB_DATABASE_URL":
                                  "postgresql+psycopg://hub:x@127.0.0.1:1/hub"})
    assert done.returncode == 6, done.stdout + done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.strip()]
    assert line.startswith("error: the database URL needs the driver 'psycopg'")
    assert "pip install 'tickethub[postgres]'" in line
    assert line.endswith("(validation_failed, field database_url)")


def test_make_engine_names_the_missing_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ValidationFailed) as raised:
        make_engine("postgresql+psycopg://hub:x@127.0.0.1:1/hub")
    assert raised.value.field == "database_url"
    assert "'psycopg'" in raised.value.detail
