"""Token checks: a burst of requests with one valid token is checked once, and does not
trip the per-address throttle meant for guessed tokens."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tickethub.domain.actors import Actor, Role
from tickethub.errors import Throttled, Unauthenticated
from tickethub.server.runtime import HubRuntime
from tickethub.services.auth import AuthService
from tickethub.services.throttle import Throttles
from tickethub.settings import Settings
from tickethub.testing import FakeClock

ADMIN = Actor("root", Role.ADMIN)


class _SlowCountingStore:
    """The hub's store, with reads counted and held a moment (so checks overlap)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.reads = 0
        self._gate = threading.Barrier(2, timeout=0.2)

    def write(self) -> Any:
        return self._store.write()

    @contextmanager
    def read(self) -> Iterator[Any]:
        self.reads += 1
        with contextlib.suppress(threading.BrokenBarrierError):
            self._gate.wait()  # a second reader would meet the first here
        with self._store.read() as uow:
            yield uow


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubRuntime]:
    runtime = HubRuntime(Settings(data_dir=tmp_path), clock=FakeClock())
    yield runtime
    runtime.close()


def _burst(auth: AuthService, token: str, count: int) -> list[Any]:
    results: list[Any] = [None] * count

    def one(i: int) -> None:
        try:
            results[i] = auth.authenticate(token, "10.0.0.1")
        except Exception as exc:  # the test looks at what each got
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_many_first_uses_of_one_valid_token_share_one_check(hub: HubRuntime) -> None:
    token, _ = hub.auth.create_token(Actor("admin", Role.ADMIN), "bot", Role.AGENT)
    store = _SlowCountingStore(hub.store)
    auth = AuthService(store, hub.clock, hub.secrets, cache_seconds=2.0,  # type: ignore[arg-type]
                       throttles=Throttles(hub.clock, address_attempts=3))
    results = _burst(auth, token, 32)
    assert all(isinstance(r, Actor) and r.name == "bot" for r in results), results
    assert store.reads == 1


def test_guessed_tokens_are_still_throttled_per_address(hub: HubRuntime) -> None:
    auth = AuthService(hub.store, hub.clock, hub.secrets, cache_seconds=2.0,
                       throttles=Throttles(hub.clock, address_attempts=3))
    outcomes = [_burst(auth, f"guess-{i}", 1)[0] for i in range(6)]
    assert all(isinstance(o, Unauthenticated) for o in outcomes[:3])
    assert any(isinstance(o, Throttled) for o in outcomes[3:])
