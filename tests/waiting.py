"""Waiting in tests until a condition holds: one polling loop for the whole suite.

``eventually`` is for async tests, ``eventually_blocking`` for synchronous code (threads,
Playwright's sync API). Both return the first truthy value of the check and fail with an
``AssertionError`` naming what never came.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any


async def eventually(
    check: Callable[[], Any],
    what: str = "the condition",
    *,
    seconds: float = 10.0,
    every: float = 0.02,
    on_timeout: Callable[[], None] | None = None,
) -> Any:
    """Call ``check()`` every ``every`` seconds until it returns something truthy, and
    return that value. ``check`` may be synchronous or return an awaitable, which is
    awaited. It is always called at least once; once ``seconds`` have passed without a
    truthy value, ``on_timeout()`` is called (if given) and ``AssertionError`` is raised
    naming ``what``. An exception from ``check`` propagates at once."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if loop.time() >= deadline:
            if on_timeout is not None:
                on_timeout()
            raise AssertionError(f"not met within {seconds:g} s: {what}")
        await asyncio.sleep(every)


def eventually_blocking(
    check: Callable[[], Any],
    what: str = "the condition",
    *,
    seconds: float = 10.0,
    every: float = 0.05,
) -> Any:
    """Call ``check()`` every ``every`` seconds, sleeping the calling thread in between,
    until it returns something truthy, and return that value. It is always called at
    least once; once ``seconds`` have passed without a truthy value, ``AssertionError``
    is raised naming ``what``. An exception from ``check`` propagates at once."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"not met within {seconds:g} s: {what}")
        time.sleep(every)
