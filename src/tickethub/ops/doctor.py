"""``tickethub doctor``: what is wrong with this hub's configuration, one line each.

Each check looks at one thing an operator sets up (the settings, the database and its
migrations, the public URL, each configured channel's credentials) and returns
:class:`Finding` values. A check never changes anything: it does not migrate, it logs in
and straight out again, it sends no mail. Channels that are not configured are not
checked. ``problem`` findings make the command exit non-zero; ``warning`` findings are
printed but are no failure; ``ok`` findings say what was checked.
"""

from __future__ import annotations

import asyncio
import contextlib
import smtplib
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from ipaddress import ip_address
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import ValidationError

from tickethub.settings import Settings

OK, WARNING, PROBLEM = "ok", "warning", "problem"
TIMEOUT = 10.0


@dataclass(frozen=True)
class Finding:
    check: str  # settings, database, migrations, clock, public_url, github, smtp, imap, matrix
    level: str  # ok, warning, problem
    message: str

    def line(self) -> str:
        return f"{self.level}: {self.check}: {self.message}"

    def as_json(self) -> dict[str, str]:
        return asdict(self)


def load_settings(**overrides: Any) -> tuple[Settings | None, list[Finding]]:
    """The settings, or the problems that keep them from loading (one per field)."""
    try:
        return Settings(**overrides), []
    except ValidationError as exc:
        return None, [Finding("settings", PROBLEM,
                              f"{'.'.join(str(p) for p in e['loc']) or 'settings'}: "
                              f"{e['msg']}") for e in exc.errors()]


def _loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


# -- the checks ---------------------------------------------------------------------------

def check_settings(s: Settings) -> Iterator[Finding]:
    if s.metrics and s.metrics_token is None and not _loopback(s.host):
        yield Finding("settings", WARNING, "metrics is on without metrics_token while the "
                      "hub listens beyond loopback: anyone who reaches it can scrape it")
    if not _loopback(s.host) and s.forwarded_allow_ips is None and s.public_url and \
            s.public_url.startswith("https://"):
        yield Finding("settings", WARNING, "public_url is https but forwarded_allow_ips is "
                      "unset: behind a TLS proxy, client addresses are the proxy's")
    yield Finding("settings", OK, "settings load")


def check_database(s: Settings, clock: Callable[[], float] = time.time
                   ) -> Iterator[Finding]:
    """The database is reachable and migrated; on PostgreSQL also this machine's
    ``clock`` against the database server's."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from sqlalchemy import create_engine, text

    from tickethub.store.migrate import alembic_config

    url = s.effective_database_url
    postgres = url.startswith("postgresql")
    engine = create_engine(url, connect_args={"connect_timeout": int(TIMEOUT)}
                           if postgres else {})
    skew: tuple[float, float] | None = None
    try:
        with engine.connect() as c:
            c.execute(text("SELECT 1"))
            current = MigrationContext.configure(c).get_current_revision()
            if postgres:
                skew = _clock_skew(c, clock)
    except Exception as exc:  # any driver's error: say it in one line
        yield Finding("database", PROBLEM, f"cannot connect to "
                      f"{engine.url.render_as_string(hide_password=True)}: "
                      f"{_first_line(exc)}")
        return
    finally:
        engine.dispose()
    yield Finding("database", OK, f"reachable ({engine.url.get_backend_name()})")
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if current is None:
        yield Finding("migrations", WARNING, f"empty database: `tickethub serve` will create "
                      f"the schema ({head})")
    elif current != head:
        yield Finding("migrations", WARNING, f"at {current}; `tickethub serve` migrates to "
                      f"{head} at start (back up first: docs/operations.md)")
    else:
        yield Finding("migrations", OK, f"up to date ({head})")
    if skew is not None:
        yield _clock_finding(*skew)


CLOCK_SKEW_WARNING = 2.0  # seconds: well inside a claim's lease (30 s) and a throttle's


def _clock_skew(connection: Any, clock: Callable[[], float]) -> tuple[float, float]:
    """How far ``clock`` is ahead of the database server's clock, in seconds, and the
    uncertainty of that (half the round trip of the query that read it). Several hub
    processes compare their own clocks through the database (the Agent Protocol
    worker's claims, the shared sign-in throttles), so each machine is held to the
    server's: within ``CLOCK_SKEW_WARNING`` of it, any two are within twice that."""
    from sqlalchemy import text

    sent = clock()
    server = float(connection.execute(
        text("SELECT extract(epoch FROM clock_timestamp())")).scalar_one())
    received = clock()
    return (sent + received) / 2 - server, (received - sent) / 2


def _clock_finding(ahead: float, uncertainty: float) -> Finding:
    off = abs(ahead) - uncertainty
    if off > CLOCK_SKEW_WARNING:
        way = "ahead of" if ahead > 0 else "behind"
        return Finding("clock", WARNING, f"this machine's clock is {abs(ahead):.1f} s {way} "
                       f"the database server's: with several hub processes on more than "
                       f"one machine, their claims and sign-in throttles disagree by "
                       f"that much; keep the clocks in sync (NTP)")
    return Finding("clock", OK, f"within {max(abs(ahead), uncertainty) * 1000:.0f} ms of "
                   f"the database server's")


def check_public_url(s: Settings) -> Iterator[Finding]:
    url = s.effective_public_url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        yield Finding("public_url", PROBLEM, f"{url!r} is not an http(s) URL with a host")
        return
    if parts.query or parts.fragment:
        yield Finding("public_url", PROBLEM, f"{url!r} has a query or fragment; links "
                      "are built by appending paths")
        return
    if s.public_url is None and not _loopback(s.host):
        yield Finding("public_url", PROBLEM, f"unset while listening on {s.host}: links in "
                      f"notifications would point at {url}")
        return
    if parts.scheme == "http" and not _loopback(parts.hostname):
        yield Finding("public_url", WARNING, f"{url} is plain http: sign-in cookies and "
                      "tokens cross the network unencrypted")
        return
    yield Finding("public_url", OK, url)


def check_github(s: Settings, transport: httpx.AsyncBaseTransport | None = None
                 ) -> Iterator[Finding]:
    if s.github_token is None and not s.github_app_id:
        return
    from tickethub.channels.github.client import GitHubError, GitHubGateway, build_github

    async def probe() -> dict[str, Any]:
        github = build_github(
            token=s.github_token.get_secret_value() if s.github_token else None,
            api_url=s.github_api_url, app_id=s.github_app_id,
            app_private_key=(s.github_app_private_key.get_secret_value()
                             if s.github_app_private_key else None),
            app_installation_id=s.github_app_installation_id, transport=transport,
            timeout=TIMEOUT)
        gateway = GitHubGateway(github).without_retries()
        try:
            return await gateway.me()
        finally:
            pool: Any = github.config.async_transport
            if hasattr(pool, "close_pool"):
                await pool.close_pool()

    try:
        me = asyncio.run(probe())
    except (GitHubError, ValueError) as exc:
        yield Finding("github", PROBLEM, f"GitHub refused the credentials: "
                      f"{_first_line(exc)}")
        return
    scopes = me.get("scopes")
    login = me.get("login", "?")
    if scopes is not None:  # a classic PAT lists its scopes; fine-grained tokens do not
        have = {x.strip() for x in str(scopes).split(",") if x.strip()}
        if not have & {"repo", "public_repo"}:
            yield Finding("github", PROBLEM, f"token of {login} lacks the repo scope "
                          f"(has: {', '.join(sorted(have)) or 'none'}); issues and "
                          "comments cannot be written")
            return
    remaining = me.get("rate_remaining")
    yield Finding("github", OK, f"signed in as {login}"
                  + (f", {remaining} requests left this hour" if remaining else ""))


def check_smtp(s: Settings) -> Iterator[Finding]:
    if not s.smtp_host:
        return
    where = f"{s.smtp_host}:{s.smtp_port}"
    try:
        context = ssl.create_default_context()
        client = (smtplib.SMTP_SSL(s.smtp_host, s.smtp_port, timeout=TIMEOUT, context=context)
                  if s.smtp_port == 465 else smtplib.SMTP(s.smtp_host, s.smtp_port,
                                                          timeout=TIMEOUT))
        with client:
            client.ehlo()
            if s.smtp_port != 465 and s.smtp_starttls and client.has_extn("starttls"):
                client.starttls(context=context)
                client.ehlo()
            if s.smtp_user:
                try:
                    _smtp_login(client, s.smtp_user, s.smtp_password.get_secret_value()
                                if s.smtp_password else "")
                except (smtplib.SMTPServerDisconnected, TimeoutError):
                    # some servers drop a bad login instead of refusing it
                    yield Finding("smtp", PROBLEM, f"{where} did not accept the login of "
                                  f"{s.smtp_user} (no answer to AUTH)")
                    return
    except smtplib.SMTPAuthenticationError:
        yield Finding("smtp", PROBLEM, f"{where} refused the login of {s.smtp_user}")
        return
    except (smtplib.SMTPException, OSError) as exc:
        yield Finding("smtp", PROBLEM, f"cannot talk to {where}: {_first_line(exc)}")
        return
    yield Finding("smtp", OK, f"{where} accepts " + (f"the login of {s.smtp_user}"
                                                      if s.smtp_user else "mail (no login)"))


def _smtp_login(client: smtplib.SMTP, user: str, password: str) -> None:
    """One login, AUTH PLAIN when offered (``smtplib.login`` would try every mechanism
    after a refusal, and some servers hang up on the second try instead of refusing)."""
    mechanisms = str(client.esmtp_features.get("auth", "")).upper().split()
    if "PLAIN" in mechanisms:
        client.user, client.password = user, password
        client.auth("PLAIN", client.auth_plain)
    else:
        client.login(user, password)


def check_imap(s: Settings) -> Iterator[Finding]:
    if not s.imap_url:
        return
    from imapclient import IMAPClient
    from imapclient.exceptions import LoginError

    from tickethub.errors import ValidationFailed
    from tickethub.mail.imap import ImapURL

    try:
        url = ImapURL.parse(s.imap_url)
    except ValidationFailed as exc:
        yield Finding("imap", PROBLEM, f"imap_url: {exc.detail}")
        return
    if s.imap_password is None:
        yield Finding("imap", WARNING, f"imap_password unset: `mail watch` will prompt "
                      f"for the password of {url.name}")
        return
    try:
        client = IMAPClient(url.host, port=url.port, ssl=url.tls, timeout=TIMEOUT)
        try:
            if not url.tls and b"STARTTLS" in client.capabilities():
                client.starttls(ssl.create_default_context())
            client.login(url.user, s.imap_password.get_secret_value())
            client.select_folder(url.folder, readonly=True)
        finally:
            with contextlib.suppress(Exception):
                client.logout()
    except LoginError:
        yield Finding("imap", PROBLEM, f"{url.host}:{url.port} refused the login of "
                      f"{url.user}")
        return
    except Exception as exc:
        yield Finding("imap", PROBLEM, f"{url.name}: {_first_line(exc)}")
        return
    yield Finding("imap", OK, f"{url.name} opens")


def check_matrix(s: Settings) -> Iterator[Finding]:
    if not s.matrix_homeserver:
        return
    base = s.matrix_homeserver.rstrip("/") + "/_matrix/client/v3"
    try:
        with httpx.Client(timeout=TIMEOUT) as http:
            if s.matrix_token is not None:
                token = s.matrix_token.get_secret_value()
                r = http.get(f"{base}/account/whoami",
                             headers={"Authorization": f"Bearer {token}"})
                if r.status_code != 200:
                    yield Finding("matrix", PROBLEM, f"{s.matrix_homeserver} refused "
                                  f"matrix_token ({r.status_code} {_errcode(r)})")
                    return
            elif s.matrix_password is not None:
                r = http.post(f"{base}/login", json={
                    "type": "m.login.password",
                    "identifier": {"type": "m.id.user", "user": s.matrix_user},
                    "password": s.matrix_password.get_secret_value(),
                    "initial_device_display_name": "tickethub doctor"})
                if r.status_code != 200:
                    yield Finding("matrix", PROBLEM, f"{s.matrix_homeserver} refused the "
                                  f"login of {s.matrix_user} ({r.status_code} "
                                  f"{_errcode(r)})")
                    return
                token = r.json()["access_token"]  # log straight out: leave no device
                http.post(f"{base}/logout", headers={"Authorization": f"Bearer {token}"})
            else:
                yield Finding("matrix", PROBLEM, "matrix_homeserver is set but neither "
                              "matrix_password nor matrix_token")
                return
    except httpx.HTTPError as exc:
        yield Finding("matrix", PROBLEM, f"cannot reach {s.matrix_homeserver}: "
                      f"{_first_line(exc)}")
        return
    yield Finding("matrix", OK, f"{s.matrix_user} signs in at {s.matrix_homeserver}")


CHECKS: list[Callable[[Settings], Iterator[Finding]]] = [
    check_settings, check_database, check_public_url, check_github, check_smtp, check_imap,
    check_matrix,
]


def run(settings: Settings | None = None, **overrides: Any) -> list[Finding]:
    """Every finding about ``settings`` (loaded from the environment when not given)."""
    findings: list[Finding] = []
    if settings is None:
        settings, findings = load_settings(**overrides)
        if settings is None:
            return findings
    for check in CHECKS:
        try:
            findings.extend(check(settings))
        except Exception as exc:  # a check that breaks is itself a finding, not a crash
            findings.append(Finding(check.__name__.removeprefix("check_"), PROBLEM,
                                    f"check failed: {_first_line(exc)}"))
    return findings


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


def _errcode(response: httpx.Response) -> str:
    try:
        return str(response.json().get("errcode", ""))
    except ValueError:
        return ""
