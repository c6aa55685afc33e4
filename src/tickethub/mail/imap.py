"""Reading an IMAP mailbox with a resumable cursor, and following it with IDLE.

* ``imaps://`` connects with TLS; ``imap://`` upgrades with STARTTLS whenever the server
  offers it (and only stays plain on a server that offers no TLS at all).
* The cursor is (UIDVALIDITY, last UID), saved after every processed mail: a run that
  dies — or a server that drops the connection mid-fetch — resumes after the last mail
  that was fully processed, and Message-IDs make any repeat harmless.
* A changed UIDVALIDITY means the server renumbered the mailbox: reading starts over and
  the Message-IDs already processed are skipped.
* Mail is fetched with ``BODY.PEEK[]``, so reading never marks anything as seen.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientError, LoginError

from tickethub.errors import ValidationFailed
from tickethub.mail.sources import RawMail
from tickethub.services.mail_state import MailState
from tickethub.services.ports import Clock

log = logging.getLogger(__name__)

Process = Callable[[RawMail], Awaitable[str]]
_DROPPED = (OSError, socket.timeout, IMAPClientError, ssl.SSLError, EOFError)
_FATAL = (LoginError, ssl.SSLCertVerificationError)


@dataclass(frozen=True, slots=True)
class ImapURL:
    host: str
    port: int
    user: str
    folder: str
    tls: bool

    @classmethod
    def parse(cls, url: str) -> ImapURL:
        parts = urlsplit(url)
        if parts.scheme not in ("imap", "imaps"):
            raise ValidationFailed("an IMAP source looks like imap://user@host/INBOX",
                                   field="source")
        if not parts.hostname or not parts.username:
            raise ValidationFailed("the IMAP URL needs user@host", field="source")
        tls = parts.scheme == "imaps"
        folder = unquote(parts.path.lstrip("/")) or "INBOX"
        return cls(parts.hostname, parts.port or (993 if tls else 143),
                   unquote(parts.username), folder, tls)

    @property
    def name(self) -> str:
        return f"imap://{self.user}@{self.host}:{self.port}/{self.folder}"


class ImapMailbox:
    """One IMAP folder as a source of mail for the pipeline."""

    def __init__(self, url: ImapURL, password: str, state: MailState, clock: Clock, *,
                 batch: int = 50, retries: int = 5, retry_delay: float = 0.5,
                 timeout: float = 30.0, ssl_context: ssl.SSLContext | None = None,
                 write_batch: Callable[[], AbstractContextManager[None]] | None = None,
                 in_thread: bool = False) -> None:
        self.url = url
        self.name = url.name
        self._password = password
        self._state = state
        self._clock = clock
        self._batch = batch
        self._retries = retries
        self._retry_delay = retry_delay
        self._timeout = timeout
        self._ssl = ssl_context or ssl.create_default_context()
        self._client: IMAPClient | None = None
        self.reconnects = 0
        self._write_batch = write_batch
        """``write_batch``: a transaction each fetched chunk's mails and cursor are
        written in (``SqlStore.batch``). On the event loop (``mail ingest``, ``mail
        watch``: a process of its own) or, with ``in_thread`` (``serve``: a hub whose
        event loop answers requests and writes other things too), in a worker thread on
        an event loop of its own, so the chunk is parsed and written off the hub's loop
        and nothing else the hub writes joins its transaction."""
        self._in_thread = in_thread

    # -- connection -----------------------------------------------------------------------

    def connect(self) -> IMAPClient:
        client = IMAPClient(self.url.host, port=self.url.port, ssl=self.url.tls,
                            ssl_context=self._ssl if self.url.tls else None,
                            timeout=self._timeout)
        if not self.url.tls and b"STARTTLS" in client.capabilities():
            client.starttls(self._ssl)
        client.login(self.url.user, self._password)
        self._client = client
        return client

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):  # already gone
                client.logout()

    async def _open(self) -> IMAPClient:
        """The open connection, or a new one (connected and logged in off the loop)."""
        if self._client is not None:
            return self._client
        return await asyncio.to_thread(self.connect)

    def _select(self, client: IMAPClient) -> int:
        info = client.select_folder(self.url.folder, readonly=True)
        return int(info[b"UIDVALIDITY"])

    # -- reading ------------------------------------------------------------------------------

    async def run(self, process: Process) -> int:
        """Process every mail after the cursor; returns how many were handed over.
        Reconnects (up to ``retries`` times in a row) when the connection drops."""
        handed = 0
        failures = 0
        while True:
            try:
                handed += await self._run_once(process)
                return handed
            except _FATAL:
                self.close()
                raise  # a wrong password or an untrusted certificate does not heal by retrying
            except _DROPPED as exc:
                failures += 1
                self.close()
                if failures > self._retries:
                    raise
                self.reconnects += 1
                log.warning("IMAP connection lost (%s); resuming from the cursor", exc)
                await asyncio.sleep(self._retry_delay * failures)

    async def _run_once(self, process: Process) -> int:
        client = await self._open()
        uidvalidity = await asyncio.to_thread(self._select, client)
        cursor = self._state.cursor(self.name)
        last = cursor.last_uid or 0 if cursor and cursor.uidvalidity == uidvalidity else 0
        uids = sorted(u for u in await asyncio.to_thread(
            client.search, ["UID", f"{last + 1}:*"]) if u > last)
        handed = 0
        chunks = [uids[start:start + self._batch] for start in range(0, len(uids),
                                                                    self._batch)]
        # The next chunk is fetched while this one is processed (one request at a time
        # on the connection: the fetch runs only while the loop processes mail).
        ahead = self._fetch(client, chunks[0]) if chunks else None
        for index, chunk in enumerate(chunks):
            assert ahead is not None
            fetched = await ahead
            ahead = self._fetch(client, chunks[index + 1]) if index + 1 < len(chunks) else None
            try:
                if self._in_thread:
                    handed += await asyncio.to_thread(
                        self._chunk_in_thread, process, chunk, fetched, uidvalidity)
                else:
                    handed += await self._chunk(process, chunk, fetched, uidvalidity)
            except BaseException:
                if ahead is not None:
                    ahead.cancel()
                    with contextlib.suppress(BaseException):
                        await ahead  # the connection is free again before a reconnect
                raise
        return handed

    async def _chunk(self, process: Process, chunk: list[int], fetched: dict[int, Any],
                     uidvalidity: int) -> int:
        """Process one fetched chunk, each mail's cursor saved after it, in one
        ``write_batch`` transaction when there is one; returns how many were handed."""
        handed = 0
        with (self._write_batch() if self._write_batch is not None
              else contextlib.nullcontext()):
            for uid in chunk:
                data = fetched.get(uid)
                if data is None:
                    continue  # expunged meanwhile
                raw = data.get(b"BODY[]") or b""
                await process(RawMail(str(uid), bytes(raw), uid))
                self._state.set_cursor(self.name, uidvalidity, uid, self._clock.now())
                handed += 1
        return handed

    def _chunk_in_thread(self, process: Process, chunk: list[int], fetched: dict[int, Any],
                         uidvalidity: int) -> int:
        return asyncio.run(self._chunk(process, chunk, fetched, uidvalidity))

    def _fetch(self, client: IMAPClient, uids: list[int]) -> asyncio.Task[dict[int, Any]]:
        return asyncio.ensure_future(asyncio.to_thread(client.fetch, uids, ["BODY.PEEK[]"]))

    async def watch(self, process: Process, *, idle_seconds: float = 300.0,
                    stop: asyncio.Event | None = None) -> None:
        """Read what is new, then wait in IDLE for more; forever, or until ``stop``."""
        stop = stop or asyncio.Event()
        while not stop.is_set():
            await self.run(process)
            try:
                await asyncio.to_thread(self._idle, min(idle_seconds, 1740.0), stop)
            except _DROPPED as exc:
                self.close()
                log.warning("IMAP IDLE interrupted (%s); reconnecting", exc)
                await asyncio.sleep(self._retry_delay)

    def _idle(self, seconds: float, stop: asyncio.Event) -> None:
        client = self._client or self.connect()
        self._select(client)
        client.idle()
        try:
            waited = 0.0
            while waited < seconds and not stop.is_set():
                step = min(1.0, seconds - waited)
                if client.idle_check(timeout=step):
                    break  # something arrived (EXISTS) or changed
                waited += step
        finally:
            client.idle_done()
