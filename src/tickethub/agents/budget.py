"""A run's budget: model calls, tokens, tool calls, wall time and (where the provider
reports it) money. Spending past a limit raises :class:`BudgetExceeded`, which the kernel
turns into a cleanly stopped run — control flow, not an error of the agent."""

from __future__ import annotations

import time
from collections.abc import Callable

from tickethub.agents.manifest import Limits
from tickethub.domain.agent_runs import BudgetUse
from tickethub.llm.port import Usage


class BudgetExceeded(Exception):
    """``limit`` names what ran out (``llm_calls``, ``tokens``, ``tool_calls``,
    ``seconds``, ``cost``)."""

    def __init__(self, limit: str, used: float, allowed: float) -> None:
        super().__init__(f"budget spent: {limit} {used:g} of {allowed:g}")
        self.limit = limit


class Budget:
    def __init__(self, limits: Limits, monotonic: Callable[[], float] = time.monotonic
                 ) -> None:
        self.limits = limits
        self._now = monotonic
        self._start = monotonic()
        self._llm_calls = 0
        self._tokens = 0
        self._tool_calls = 0
        self._cost = 0.0

    @property
    def used(self) -> BudgetUse:
        return BudgetUse(self._llm_calls, self._tokens, self._tool_calls,
                         self._now() - self._start, self._cost)

    def seconds_left(self) -> float:
        return max(0.0, self.limits.seconds - (self._now() - self._start))

    def before_llm_call(self) -> None:
        """Raise unless another model call fits."""
        self.check_time()
        if self._llm_calls >= self.limits.llm_calls:
            raise BudgetExceeded("llm_calls", self._llm_calls + 1, self.limits.llm_calls)
        if self._tokens >= self.limits.tokens:
            raise BudgetExceeded("tokens", self._tokens, self.limits.tokens)
        self._llm_calls += 1

    def after_llm_call(self, usage: Usage, cost: float | None = None) -> None:
        """Count what the call used; raise when it went past the token or money limit
        (the reply is then not acted on)."""
        self._tokens += usage.total_tokens
        self._cost += cost or 0.0
        if self._tokens > self.limits.tokens:
            raise BudgetExceeded("tokens", self._tokens, self.limits.tokens)
        if self.limits.cost is not None and self._cost > self.limits.cost:
            raise BudgetExceeded("cost", self._cost, self.limits.cost)

    def charge_reported(self, llm_calls: int, tokens: int, cost: float | None) -> None:
        """Count model use a runner outside the hub reports (an Actions workflow); raise
        when it went past a limit (the run's actions are then not applied)."""
        self._llm_calls += llm_calls
        self._tokens += tokens
        self._cost += cost or 0.0
        if self._llm_calls > self.limits.llm_calls:
            raise BudgetExceeded("llm_calls", self._llm_calls, self.limits.llm_calls)
        if self._tokens > self.limits.tokens:
            raise BudgetExceeded("tokens", self._tokens, self.limits.tokens)
        if self.limits.cost is not None and self._cost > self.limits.cost:
            raise BudgetExceeded("cost", self._cost, self.limits.cost)

    def before_tool_call(self) -> None:
        self.check_time()
        if self._tool_calls >= self.limits.tool_calls:
            raise BudgetExceeded("tool_calls", self._tool_calls + 1, self.limits.tool_calls)
        self._tool_calls += 1

    def check_time(self) -> None:
        elapsed = self._now() - self._start
        if elapsed > self.limits.seconds:
            raise BudgetExceeded("seconds", elapsed, self.limits.seconds)
