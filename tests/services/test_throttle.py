"""The back-off of ``services/throttle.py`` on a fake clock, and what the processes of
one hub tell each other of it."""

from __future__ import annotations

import json

import pytest

from tickethub.errors import Throttled, Unauthenticated
from tickethub.services.throttle import (
    SHARED_KEY_MAX,
    Backoff,
    Throttle,
    Throttles,
    attempt,
)
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


def _pair(clock: FakeClock) -> tuple[Throttles, Throttles, list[str]]:
    """Two processes' throttles, each sending to the other (as the bus does: a process
    never receives its own messages)."""
    sent: list[str] = []
    one, other = (Throttles(clock, account_attempts=3, address_attempts=3, base_seconds=2)
                  for _ in range(2))

    def to_other(message: str) -> None:
        sent.append(message)
        other.receive(message)

    one.share(to_other)
    other.share(one.receive)
    return one, other, sent


def test_failures_in_one_process_lock_the_key_in_another() -> None:
    clock = FakeClock()
    one, other, sent = _pair(clock)
    for _ in range(3):
        _fail(one.token_addresses, "address 10.0.0.9")
    assert len(sent) == 3  # each confirmed failure, once
    assert other.token_addresses.retry_after("address 10.0.0.9") == 2
    with (pytest.raises(Throttled),  # refused there before the token is looked at
          attempt((other.token_addresses, "address 10.0.0.9"), field="f", what="tries")):
        pass
    assert other.token_addresses.retry_after("address 10.0.0.10") == 0
    assert other.sign_in_addresses.retry_after("address 10.0.0.9") == 0  # counted apart


def test_failures_spread_over_processes_add_up() -> None:
    clock = FakeClock()
    one, other, _ = _pair(clock)
    _fail(one.sign_in_accounts, "account alice")
    _fail(other.sign_in_accounts, "account alice")
    _fail(one.sign_in_accounts, "account alice")
    assert one.sign_in_accounts.retry_after("account alice") == 2
    assert other.sign_in_accounts.retry_after("account alice") == 2


def test_an_accounts_success_resets_it_everywhere_an_address_only_takes_back() -> None:
    clock = FakeClock()
    one, other, sent = _pair(clock)
    for _ in range(2):
        _fail(one.sign_in_accounts, "account alice")
        _fail(one.sign_in_addresses, "address 10.0.0.9")
    with attempt((one.sign_in_accounts, "account alice"),
                 (one.sign_in_addresses, "address 10.0.0.9"), field="f", what="tries"):
        pass  # the right password
    assert json.loads(sent[-1]) == {"throttle": "signin_account", "event": "reset",
                                    "key": "account alice", "at": clock.now().isoformat()}
    _fail(other.sign_in_accounts, "account alice")
    assert other.sign_in_accounts.retry_after("account alice") == 0  # 1 failure, not 3
    _fail(other.sign_in_addresses, "address 10.0.0.9")
    assert other.sign_in_addresses.retry_after("address 10.0.0.9") == 2  # 2 + 1


def test_a_made_up_name_too_long_to_send_stays_in_its_process() -> None:
    clock = FakeClock()
    one, _, sent = _pair(clock)
    key = "account " + "x" * SHARED_KEY_MAX
    for _ in range(3):
        _fail(one.sign_in_accounts, key)
    assert sent == [] and one.sign_in_accounts.retry_after(key) == 2


@pytest.mark.parametrize("message", [
    "not json", "[]", '{"throttle": "signin_account"}',
    '{"throttle": "signin_account", "event": "failed", "key": "k", "at": "yesterday"}',
])
def test_a_message_not_understood_changes_nothing(message: str) -> None:
    throttles = Throttles(FakeClock())
    throttles.receive(message)
    assert all(t.locked_keys() == 0 for t in throttles.all().values())


def test_a_message_of_an_unknown_throttle_or_event_is_ignored() -> None:
    clock = FakeClock()
    throttles = Throttles(clock, account_attempts=1)
    at = clock.now().isoformat()
    throttles.receive(json.dumps({"throttle": "new_kind", "event": "failed", "key": "k",
                                  "at": at}))
    throttles.receive(json.dumps({"throttle": "signin_account", "event": "rebooted",
                                  "key": "k", "at": at}))
    assert throttles.sign_in_accounts.retry_after("k") == 0


def test_a_sign_in_with_no_failures_before_it_sends_nothing() -> None:
    clock = FakeClock()
    one, _, sent = _pair(clock)
    with attempt((one.sign_in_accounts, "account alice"),
                 (one.sign_in_addresses, "address 10.0.0.9"), field="f", what="tries"):
        pass
    assert sent == []
