"""``make run`` installs the hub without extras (``pip install -e .``) and starts it on
SQLite: nothing on that path may need a package that only the ``postgres`` or ``dev``
extras bring. The suite itself runs with them installed, so these tests hide them
(``sys.modules[name] = None`` makes ``import name`` fail) in a fresh interpreter.

Found on a fresh machine: ``serve`` imported ``psycopg`` (the PostgreSQL driver) for its
leader election, and ``make run`` stopped with ``ModuleNotFoundError``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import LIVE_TIMEOUT
from tickethub.errors import ValidationFailed
from tickethub.sdk.testing import free_port
from tickethub.store.engine import make_engine

# Top-level modules of the packages only the extras install (pyproject.toml:
# ``postgres`` and ``dev``); none of the hub's own dependencies needs them.
EXTRAS_ONLY = ("psycopg", "psycopg_binary", "pytest", "openai", "aiosmtpd", "playwright",
               "schemathesis", "hatchling", "mypy")
# Modules that exist for PostgreSQL alone, imported only once a PostgreSQL URL is set.
POSTGRESQL_ONLY = {"tickethub.bus.postgres"}
ADMIN_TOKEN = "th_admin_plain_" + "p" * 34
SRC = Path(__file__).resolve().parents[2] / "src"

_HIDE = "import sys\nfor name in {names!r}:\n    sys.modules[name] = None\n"


def _python(code: str, **kw: object) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TICKETHUB_") and k != "SQLALCHEMY_URL"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return subprocess.Popen([sys.executable, "-c", _HIDE.format(names=EXTRAS_ONLY) + code],
                            env={**env, **kw.pop("env", {})},  # type: ignore[dict-item]
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def test_every_module_imports_without_the_extras() -> None:
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
    out, err = _python(code).communicate(timeout=300)
    assert err == "" and out.strip() == "", out + err


def test_serve_starts_and_answers_without_the_extras(tmp_path: Path) -> None:
    port = free_port()
    code = ("from tickethub.cli.main import main\n"
            f"sys.argv = ['tickethub', 'serve', '--port', '{port}', '--data-dir', "
            f"{str(tmp_path / 'data')!r}]\nmain()\n")
    process = _python(code, env={"TICKETHUB_ADMIN_TOKEN": ADMIN_TOKEN}, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, process.communicate()
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the hub did not start"
            time.sleep(0.2)
        auth = {"authorization": f"Bearer {ADMIN_TOKEN}"}
        asked = httpx.post(url + "/api/v1/tickets", headers=auth, timeout=LIVE_TIMEOUT,
                           json={"kind": "question", "title": "Ship it?"})
        assert asked.status_code == 201, asked.text
        listed = httpx.get(url + "/api/v1/tickets", headers=auth, timeout=LIVE_TIMEOUT)
        assert [t["title"] for t in listed.json()["items"]] == ["Ship it?"]
    finally:
        process.terminate()
        _, log = process.communicate(timeout=60)
    assert process.returncode == -signal.SIGTERM, log  # a clean stop, as test_serve.py's
    assert "ModuleNotFoundError" not in log


def test_a_postgresql_url_without_its_driver_is_one_clear_line(tmp_path: Path) -> None:
    """A plain install pointed at PostgreSQL: exit 6 (invalid) and one line saying what
    to install, not a traceback from SQLAlchemy's driver import."""
    code = ("from tickethub.cli.main import main\n"
            "sys.argv = ['tickethub', 'serve']\nmain()\n")
    process = _python(code, cwd=tmp_path, env={
        "TICKETHUB_DATABASE_URL": "postgresql+psycopg://hub:x@127.0.0.1:1/hub",
        "TICKETHUB_DATA_DIR": str(tmp_path)})
    out, err = process.communicate(timeout=120)
    assert process.returncode == 6, out + err
    [line] = [x for x in err.splitlines() if x.strip()]
    assert line.startswith("error: the database URL needs the driver 'psycopg'")
    assert "pip install 'tickethub[postgres]'" in line
    assert line.endswith("(validation_failed, field database_url)")


def test_make_engine_names_the_missing_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ValidationFailed) as raised:
        make_engine("postgresql+psycopg://hub:x@127.0.0.1:1/hub")
    assert raised.value.field == "database_url"
    assert "'psycopg'" in raised.value.detail
