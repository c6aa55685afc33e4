"""The back-off of ``services/throttle.py`` on a fake clock."""

from __future__ import annotations

import pytest

from tickethub.errors import Throttled, Unauthenticated
from tickethub.services.throttle import Backoff, Throttle, attempt
from tickethub.testing import FakeClock

BACKOFF = Backoff(free_attempts=3, base_seconds=2, max_seconds=10, forget_seconds=60)


def _fail(throttle: Throttle, key: str = "k") -> None:
    with pytest.raises(Unauthenticated), attempt((throttle, key), field="f", what="tries"):
        raise Unauthenticated("no")


def test_back_off_doubles_up_to_the_cap() -> None:
    assert [BACKOFF.lock_seconds(n) for n in range(0, 8)] == [0, 0, 0, 2, 4, 8, 10, 10]
    assert Backoff(1, 1, 900).lock_seconds(10_000) == 900  # no overflow


def test_a_locked_key_is_refused_before_the_check_and_forgotten_later() -> None:
    clock = FakeClock()
    throttle = Throttle("tries", clock, BACKOFF, resets_on_success=True)
    for _ in range(3):
        _fail(throttle)
    checked = []
    with pytest.raises(Throttled) as refused, attempt((throttle, "k"), field="f", what="tries"):
        checked.append(True)
    assert not checked and refused.value.retry_after == 2 and refused.value.field == "f"
    clock.advance(seconds=1.5)
    assert throttle.retry_after("k") == 0.5  # refused attempts do not lengthen the lock
    clock.advance(seconds=60)
    assert throttle.retry_after("k") == 0
    _fail(throttle)  # forgotten: one failure again, no lock
    assert throttle.retry_after("k") == 0


def test_attempts_in_flight_count_already() -> None:
    throttle = Throttle("tries", FakeClock(), BACKOFF, resets_on_success=True)
    for _ in range(3):  # three parallel checks, none finished yet
        assert throttle.begin("k") == 0
    assert throttle.begin("k") == 2


def test_success_resets_an_account_but_only_takes_back_for_an_address() -> None:
    clock = FakeClock()
    account = Throttle("account", clock, BACKOFF, resets_on_success=True)
    address = Throttle("address", clock, BACKOFF, resets_on_success=False)
    for _ in range(2):
        _fail(account)
        _fail(address)
    with attempt((account, "k"), (address, "k"), field="f", what="tries"):
        pass
    _fail(account)
    _fail(address)
    assert account.retry_after("k") == 0  # 1 failure since the success
    assert address.retry_after("k") == 2  # 3 failures: the success did not wash them


def test_a_refused_attempt_takes_back_what_other_keys_counted() -> None:
    clock = FakeClock()
    account = Throttle("account", clock, BACKOFF, resets_on_success=True)
    address = Throttle("address", clock, BACKOFF, resets_on_success=False)
    for _ in range(3):
        _fail(account, "pat")
    for _ in range(5):
        with (pytest.raises(Throttled),
              attempt((address, "ip"), (account, "pat"), field="f", what="tries")):
            pass
    assert address.begin("ip") == 0 and address.begin("ip") == 0  # nothing was counted


def test_the_table_is_bounded() -> None:
    throttle = Throttle("tries", FakeClock(), Backoff(1, 1, 10, 60), resets_on_success=True,
                        max_keys=3)
    for name in "abcd":
        _fail(throttle, name)
    assert throttle.retry_after("a") == 0  # the oldest was dropped
    assert throttle.retry_after("d") == 1
