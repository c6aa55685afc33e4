"""``tickethub doctor`` against a good configuration and a broken one of each kind,
with the shared real servers (PostgreSQL, SMTP, IMAP, Matrix) for good and bad logins;
GitHub through githubkit against spec-shaped responses."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from tests.conftest import ADMIN_TOKEN, require_server
from tickethub.cli.main import cli
from tickethub.ops import doctor
from tickethub.ops.doctor import OK, PROBLEM, WARNING, Finding
from tickethub.settings import Settings
from tickethub.store.engine import make_engine
from tickethub.store.migrate import upgrade

ENV = os.environ


def _by_check(findings: list[Finding], check: str) -> list[Finding]:
    return [f for f in findings if f.check == check]


def _levels(findings: list[Finding], check: str) -> set[str]:
    return {f.level for f in _by_check(findings, check)}


@pytest.fixture
def good(runtime) -> Settings:
    """A migrated database plus every channel configured against the real servers."""
    require_server("IMAP/SMTP", "IMAP_HOST" in ENV and "SMTP_HOST" in ENV)
    require_server("Matrix", "MATRIX_HOMESERVER_URL" in ENV)
    return runtime.settings.model_copy(update={
        "smtp_host": ENV["SMTP_HOST"], "smtp_port": int(ENV["SMTP_PORT"]),
        "smtp_user": ENV["IMAP_USER"], "smtp_password": ENV["IMAP_PASSWORD"],
        "imap_url": f"imap://{ENV['IMAP_USER']}@{ENV['IMAP_HOST']}:{ENV['IMAP_PORT']}/INBOX",
        "imap_password": ENV["IMAP_PASSWORD"],
        "matrix_homeserver": ENV["MATRIX_HOMESERVER_URL"],
        "matrix_user": ENV.get("MATRIX_BOT_USER", "@bot:localhost"),
        "matrix_password": ENV.get("MATRIX_BOT_PASSWORD", "bot-password"),
    })


def _secret(value: str):  # model_copy does not validate: give SecretStr values directly
    from pydantic import SecretStr

    return SecretStr(value)


def _fix(settings: Settings) -> Settings:
    """Turn the plain strings model_copy left into SecretStr, as loading would."""
    update = {k: _secret(getattr(settings, k)) for k in (
        "smtp_password", "imap_password", "matrix_password") if isinstance(
        getattr(settings, k), str)}
    return settings.model_copy(update=update)


def test_a_good_configuration_has_no_problems(good):
    findings = doctor.run(_fix(good))
    assert [f for f in findings if f.level == PROBLEM] == []
    for check in ("settings", "database", "migrations", "public_url", "smtp", "imap",
                  "matrix"):
        assert _levels(findings, check) == {OK}, (check, findings)


def test_bad_settings_are_one_line_each():
    settings, findings = doctor.load_settings(port=99999, bus="carrier-pigeon")
    assert settings is None
    assert {f.message.split(":")[0] for f in findings} == {"port", "bus"}
    assert all(f.level == PROBLEM and "\n" not in f.message for f in findings)


def test_the_cli_exits_non_zero_on_bad_settings_and_prints_json():
    runner = CliRunner()
    result = runner.invoke(cli, ["doctor"], env={"TICKETHUB_PORT": "99999"})
    assert result.exit_code == 1
    assert "problem: settings: port:" in result.output
    as_json = runner.invoke(cli, ["doctor", "--json"], env={"TICKETHUB_PORT": "99999"})
    assert as_json.exit_code == 1
    assert json.loads(as_json.output)[0] == {
        "check": "settings", "level": "problem",
        "message": "port: Input should be less than or equal to 65535"}


def test_an_unreachable_database_and_a_wrong_password(tmp_path):
    require_server("PostgreSQL", "PGPORT" in ENV)
    url = (f"postgresql+psycopg://{ENV['PGUSER']}:wrong-pw-123@{ENV['PGHOST']}:"
           f"{ENV['PGPORT']}/{ENV['PGDATABASE']}")
    findings = doctor.run(Settings(data_dir=tmp_path, database_url=url))
    [db] = _by_check(findings, "database")
    assert db.level == PROBLEM and "cannot connect" in db.message
    assert "wrong-pw-123" not in db.message
    assert _by_check(findings, "migrations") == []
    closed = doctor.run(Settings(data_dir=tmp_path, database_url=(
        "postgresql+psycopg://u:p@127.0.0.1:9/nothing")))
    assert _levels(closed, "database") == {PROBLEM}


def _postgres_settings(tmp_path: Path) -> Settings:
    require_server("PostgreSQL", "PGPORT" in ENV)
    return Settings(data_dir=tmp_path, database_url=(
        f"postgresql+psycopg://{ENV['PGUSER']}:{ENV['PGPASSWORD']}@{ENV['PGHOST']}:"
        f"{ENV['PGPORT']}/{ENV['PGDATABASE']}"))


def test_a_clock_in_sync_with_the_database_server_is_ok(tmp_path):
    findings = doctor.run(_postgres_settings(tmp_path))
    [clock] = _by_check(findings, "clock")
    assert clock.level == OK and "of the database server's" in clock.message


@pytest.mark.parametrize(("offset", "words"), [(30.0, "30.0 s ahead of"),
                                               (-45.0, "45.0 s behind")])
def test_a_clock_off_the_database_servers_is_a_warning(tmp_path, offset, words):
    settings = _postgres_settings(tmp_path)
    [clock] = [f for f in doctor.check_database(settings, clock=lambda: time.time() + offset)
               if f.check == "clock"]
    assert clock.level == WARNING and words in clock.message and "NTP" in clock.message
    # Within the margin, or off by less than the round trip can tell: no warning.
    [near] = [f for f in doctor.check_database(settings, clock=lambda: time.time() + 1.5)
              if f.check == "clock"]
    assert near.level == OK


def test_sqlite_has_no_clock_to_compare(tmp_path):
    findings = doctor.run(Settings(data_dir=tmp_path))
    assert _by_check(findings, "clock") == []
    assert _levels(findings, "database") == {OK}


def test_an_old_or_empty_schema_is_a_warning(tmp_path):
    old = tmp_path / "old.db"
    engine = make_engine(f"sqlite:///{old}")
    upgrade(engine, "0012_chat_conversations")
    engine.dispose()
    findings = doctor.run(Settings(data_dir=tmp_path, database_url=f"sqlite:///{old}"))
    [migrations] = _by_check(findings, "migrations")
    assert migrations.level == WARNING and "at 0012_chat_conversations" in migrations.message
    empty = doctor.run(Settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path}/e.db"))
    assert "empty database" in _by_check(empty, "migrations")[0].message


def test_public_url_problems(runtime):
    s = runtime.settings
    assert _levels(doctor.run(s.model_copy(update={"public_url": "ftp://hub"})),
                   "public_url") == {PROBLEM}
    unset = doctor.run(s.model_copy(update={"host": "0.0.0.0"}))
    assert _levels(unset, "public_url") == {PROBLEM}
    plain = doctor.run(s.model_copy(update={"host": "0.0.0.0",
                                            "public_url": "http://hub.example.org"}))
    assert _levels(plain, "public_url") == {WARNING}
    tls = doctor.run(s.model_copy(update={"host": "0.0.0.0",
                                          "public_url": "https://hub.example.org"}))
    assert _levels(tls, "public_url") == {OK}


def test_smtp_wrong_password_and_wrong_port(good):
    wrong = _fix(good.model_copy(update={"smtp_password": "not-it"}))
    [smtp] = _by_check(doctor.run(wrong), "smtp")
    # (the recipe's server hangs up on a bad login rather than answering 535)
    assert smtp.level == PROBLEM and f"login of {ENV['IMAP_USER']}" in smtp.message
    closed = _fix(good.model_copy(update={"smtp_port": 9}))
    assert _levels(doctor.run(closed), "smtp") == {PROBLEM}


def test_imap_wrong_password(good):
    wrong = _fix(good.model_copy(update={"imap_password": "not-it"}))
    [imap] = _by_check(doctor.run(wrong), "imap")
    assert imap.level == PROBLEM and "refused the login" in imap.message
    bad_url = _fix(good.model_copy(update={"imap_url": "pop3://x@y"}))
    assert _levels(doctor.run(bad_url), "imap") == {PROBLEM}


def test_matrix_wrong_login(good):
    # A user nobody else's tests sign in as, so no one else's account is affected.
    wrong = _fix(good.model_copy(update={"matrix_user": "@doctor-nobody:localhost",
                                         "matrix_password": "not-it"}))
    [matrix] = _by_check(doctor.run(wrong), "matrix")
    assert matrix.level == PROBLEM and "M_FORBIDDEN" in matrix.message
    token = _fix(good.model_copy(update={"matrix_token": _secret("syt_not_a_token")}))
    assert _levels(doctor.run(token), "matrix") == {PROBLEM}


def _github(status: int, scopes: str | None) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/user"
        headers = {"x-ratelimit-remaining": "4999"}
        if scopes is not None:
            headers["x-oauth-scopes"] = scopes
        if status != 200:
            return httpx.Response(status, json={"message": "Bad credentials"},
                                  headers=headers)
        return httpx.Response(200, json={"login": "octocat", "id": 1}, headers=headers)
    return httpx.MockTransport(handle)


@pytest.mark.parametrize(("status", "scopes", "level", "words"), [
    (200, "repo, workflow", OK, "signed in as octocat"),
    (200, None, OK, "signed in as octocat"),  # fine-grained tokens list no scopes
    (200, "read:user, gist", PROBLEM, "lacks the repo scope"),
    (401, None, PROBLEM, "refused the credentials"),
])
def test_github_token_scopes(tmp_path, status, scopes, level, words):
    settings = Settings(data_dir=tmp_path, github_token=_secret("ghp_doctor"),
                        admin_token=ADMIN_TOKEN)
    [github] = doctor.check_github(settings, transport=_github(status, scopes))
    assert github.level == level and words in github.message


def test_unconfigured_channels_are_not_checked(runtime):
    findings = doctor.run(runtime.settings)
    clock = {"clock"} if runtime.settings.effective_database_url.startswith("postgresql") \
        else set()
    assert {f.check for f in findings} == {"settings", "database", "migrations",
                                           "public_url", *clock}
    assert all(f.level == OK for f in findings)


def test_cli_prints_only_what_is_wrong(runtime, monkeypatch):
    for key in [k for k in os.environ if k.startswith("TICKETHUB_")]:
        monkeypatch.delenv(key)
    data_dir: Path = runtime.settings.data_dir
    runner = CliRunner()
    env = {"TICKETHUB_DATABASE_URL": runtime.settings.effective_database_url,
           "TICKETHUB_PUBLIC_URL": "ftp://nowhere"}
    result = runner.invoke(cli, ["doctor", "--data-dir", str(data_dir)], env=env)
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "problem: public_url: 'ftp://nowhere' is not an http(s) URL with a host"]
    env.pop("TICKETHUB_PUBLIC_URL")
    fine = runner.invoke(cli, ["doctor", "--data-dir", str(data_dir)], env=env)
    assert fine.exit_code == 0 and fine.output.startswith("no problems")
