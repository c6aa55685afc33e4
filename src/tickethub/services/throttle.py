"""Throttling of failed sign-ins, one-time links and API tokens: exponential back-off per
key (an account, a client address).

Contracts:

* A key may fail ``free_attempts`` times; after that, each attempt waits until
  ``base_seconds * 2**(failures - free_attempts)`` seconds (at most ``max_seconds``) have
  passed since the last failure. An attempt made earlier is refused with
  :class:`~tickethub.errors.Throttled` (429, ``retry_after``) *before* the credential is
  looked at, so the right password during a lock is refused too, and refused attempts
  do not lengthen the lock.
* Every attempt counts as a failure from the moment it starts (so many attempts in
  parallel cannot all slip past the check); success takes it back. A throttle with
  ``resets_on_success`` (accounts) forgets the key on success; one without (client
  addresses) only takes back that attempt, so one valid account does not wash an
  address's failures away.
* Failures are forgotten ``forget_seconds`` after the last one. At most ``max_keys`` keys
  are kept (oldest failure dropped first), so a flood of made-up names cannot fill memory.
* Each lock is written to the ``tickethub.audit`` log (a WARNING naming the throttle, the
  key and the number of failures) when a failure starts it.
* State lives in this process (thread-safe); time comes from the ``Clock`` port.
* Several processes serving one database (``serve --workers``) share what they learn:
  with :meth:`Throttles.share` each confirmed failure (and each account's reset by a
  success) is sent to the others, which count it as their own
  (:meth:`Throttles.receive`). Attempts still running in another process are not seen,
  and what is sent while a process is cut off from the others is lost to it.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from tickethub.errors import Throttled, Unauthenticated
from tickethub.services.ports import Clock

audit = logging.getLogger("tickethub.audit")
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Backoff:
    free_attempts: int = 5
    base_seconds: float = 1.0
    max_seconds: float = 900.0
    forget_seconds: float = 3600.0

    def lock_seconds(self, failures: int) -> float:
        """How long after the last of ``failures`` failures the next attempt must wait."""
        if failures < self.free_attempts:
            return 0.0
        exponent = min(failures - self.free_attempts, 64)  # 2**64 s is past any max
        return float(min(self.base_seconds * 2.0**exponent, self.max_seconds))


class Throttle:
    """Failed attempts of one kind (``name``, e.g. "sign-in per account") per key."""

    def __init__(self, name: str, clock: Clock, backoff: Backoff, *,
                 resets_on_success: bool, max_keys: int = 100_000) -> None:
        self.name = name
        self._clock = clock
        self._backoff = backoff
        self._resets = resets_on_success
        self._max_keys = max_keys
        self._lock = threading.Lock()
        # key → (failures, time of the last one); ordered oldest failure first.
        self._failures: OrderedDict[str, tuple[int, datetime]] = OrderedDict()
        self.refused = 0  # attempts refused while their key was locked, since start
        # Told of each confirmed failure ("failed") and reset ("reset") with its key and
        # time, for the other processes (``Throttles.share``).
        self.shared: Callable[[str, str, datetime], None] | None = None

    def retry_after(self, key: str) -> float:
        """Seconds until ``key`` may try again; 0 when it may now."""
        with self._lock:
            return self._wait(key, self._clock.now())

    def begin(self, key: str) -> float:
        """Start an attempt: counts it as a failure and returns 0, or returns the seconds
        to wait (nothing counted) while ``key`` is locked."""
        now = self._clock.now()
        with self._lock:
            wait = self._wait(key, now)
            if wait > 0:
                self.refused += 1
                return wait
            self._count(key, now)
        return 0.0

    def _count(self, key: str, at: datetime) -> None:
        failures, last = self._failures.pop(key, (0, at))
        self._failures[key] = (failures + 1, max(last, at))
        while len(self._failures) > self._max_keys:
            self._failures.popitem(last=False)

    def observe(self, event: str, key: str, at: datetime) -> None:
        """What another process sent (``shared``): its failure of ``key`` at ``at`` counts
        here too ("failed"), or ``key`` succeeded there and is forgotten ("reset")."""
        with self._lock:
            if event == "failed":
                self._count(key, at)
            elif event == "reset":
                self._failures.pop(key, None)

    def locked_keys(self) -> int:
        """How many keys must wait right now (walks every key kept: for metrics)."""
        now = self._clock.now()
        with self._lock:
            return sum(1 for failures, last in list(self._failures.values())
                       if self._backoff.lock_seconds(failures) > (now - last).total_seconds())

    def failed(self, key: str) -> None:
        """The attempt ``begin`` counted failed: audit the lock it starts, if any."""
        with self._lock:
            failures, last = self._failures.get(key, (0, None))
        lock = self._backoff.lock_seconds(failures)
        if lock > 0:
            audit.warning("%s throttled: %s locked for %gs after %d failed attempts",
                          self.name, key, lock, failures)
        if self.shared is not None and last is not None:
            self.shared("failed", key, last)

    def succeeded(self, key: str) -> None:
        """The attempt ``begin`` counted succeeded: forget the key if this throttle
        resets on success, else take the attempt back."""
        if self._resets:
            with self._lock:
                failures = self._failures.pop(key, (0, None))[0]
            # Only this attempt counted: no process has failures of the key to forget
            # (each heard of every failure), so a plain sign-in sends nothing.
            if failures > 1 and self.shared is not None:
                self.shared("reset", key, self._clock.now())
        else:
            self.take_back(key)

    def take_back(self, key: str) -> None:
        """Undo the count of an attempt that was neither a success nor a failure."""
        with self._lock:
            entry = self._failures.get(key)
            if entry is None:
                return
            if entry[0] <= 1:
                del self._failures[key]
            else:
                self._failures[key] = (entry[0] - 1, entry[1])

    def _wait(self, key: str, now: datetime) -> float:
        entry = self._failures.get(key)
        if entry is None:
            return 0.0
        failures, last = entry
        elapsed = (now - last).total_seconds()
        if elapsed >= self._backoff.forget_seconds:
            del self._failures[key]
            return 0.0
        return max(0.0, self._backoff.lock_seconds(failures) - elapsed)


@contextmanager
def attempt(*checks: tuple[Throttle, str], field: str, what: str) -> Iterator[None]:
    """Guard one credential check against every ``(throttle, key)`` in ``checks``.

    Raises :class:`Throttled` (naming ``field``; the same words whichever key is locked,
    so a lock tells nothing about whether an account exists) when any key is locked.
    An :class:`Unauthenticated` raised inside counts as a failure for every key; a clean
    exit as a success. Other errors take the attempt back."""
    begun: list[tuple[Throttle, str]] = []
    for throttle, key in checks:
        wait = throttle.begin(key)
        if wait > 0:
            for done, done_key in begun:
                done.take_back(done_key)  # this attempt never happened
            seconds = max(1, math.ceil(wait))
            raise Throttled(f"too many failed {what}; try again in {seconds} s",
                            field=field, retry_after=seconds)
        begun.append((throttle, key))
    try:
        yield
    except Unauthenticated:
        for throttle, key in begun:
            throttle.failed(key)
        raise
    except BaseException:
        for throttle, key in begun:
            throttle.take_back(key)
        raise
    for throttle, key in begun:
        throttle.succeeded(key)


class Throttles:
    """The throttles of the hub's credential checks, all made from one set of limits:
    sign-ins per account and per client address, sign-in links and API tokens per client
    address (each counted apart, so a script with a stale token does not lock its
    owner's browser out)."""

    def __init__(self, clock: Clock, *, account_attempts: int = 5, address_attempts: int = 20,
                 base_seconds: float = 1.0, max_seconds: float = 900.0,
                 forget_seconds: float = 3600.0) -> None:
        account = Backoff(account_attempts, base_seconds, max_seconds, forget_seconds)
        address = Backoff(address_attempts, base_seconds, max_seconds, forget_seconds)
        self.sign_in_accounts = Throttle("sign-in per account", clock, account,
                                         resets_on_success=True)
        self.sign_in_addresses = Throttle("sign-in per address", clock, address,
                                          resets_on_success=False)
        self.link_addresses = Throttle("sign-in link per address", clock, address,
                                       resets_on_success=False)
        self.token_addresses = Throttle("API token per address", clock, address,
                                        resets_on_success=False)

    def all(self) -> dict[str, Throttle]:
        """Every throttle by a short fixed name (metric labels, messages between
        processes)."""
        return {"signin_account": self.sign_in_accounts,
                "signin_address": self.sign_in_addresses,
                "link_address": self.link_addresses, "token_address": self.token_addresses}

    def share(self, send: Callable[[str], None]) -> None:
        """Hand each throttle's confirmed failures and resets to ``send`` as one text
        message each, for :meth:`receive` in the other processes. ``send`` must not
        block (it is called where credentials are checked). Keys longer than
        ``SHARED_KEY_MAX`` (made-up account names) stay in this process."""
        for name, throttle in self.all().items():
            def shared(event: str, key: str, at: datetime, name: str = name) -> None:
                if len(key) <= SHARED_KEY_MAX:
                    send(json.dumps({"throttle": name, "event": event, "key": key,
                                     "at": at.isoformat()}))
            throttle.shared = shared

    def receive(self, message: str) -> None:
        """Count what another process's :meth:`share` sent. A message this version does
        not understand is ignored (processes of two versions during an upgrade)."""
        try:
            data = json.loads(message)
            throttle = self.all().get(data["throttle"])
            at = datetime.fromisoformat(data["at"])
            event, key = str(data["event"]), str(data["key"])
        except (ValueError, KeyError, TypeError):
            log.warning("ignored a throttle message from another process: %.200r", message)
            return
        if throttle is not None:
            throttle.observe(event, key, at)


SHARED_KEY_MAX = 1000  # characters; a message between processes holds at most 8,000 bytes


def address_key(client: str | None) -> str:
    """The throttle key of a client address (``None``: not known, e.g. in-process calls)."""
    return f"address {client or 'unknown'}"
