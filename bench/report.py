"""Result rows, the combined table, and the JSON files under ``bench/results/``.

A ``Row`` is one measured number with its unit, the goal from the issue (if any) and an
anchor measured or defined in the same run; ``ratio`` is always ``value / anchor``.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

RESULTS_ENV = "TICKETHUB_BENCH_RESULTS"  # another folder for the JSON files (the smoke test)
RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Goal:
    """``value <op> limit``; ``op`` is ``"<="`` or ``">="``."""

    op: str
    limit: float

    def met(self, value: float) -> bool:
        return value <= self.limit if self.op == "<=" else value >= self.limit


@dataclass(frozen=True)
class Row:
    bench: str
    metric: str
    value: float
    unit: str
    goal: Goal | None = None
    anchor: str | None = None
    anchor_value: float | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.anchor_value is None or self.anchor_value == 0:
            return None
        return self.value / self.anchor_value

    @property
    def met(self) -> bool | None:
        return None if self.goal is None else self.goal.met(self.value)

    def as_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["goal"] = f"{self.goal.op} {_num(self.goal.limit)}" if self.goal else None
        data["ratio"] = self.ratio
        data["met"] = self.met
        return data


def median_of_turns(values: Sequence[float]) -> float:
    """The median of a few turns' results: with an even number of turns, the mean of the
    two middle ones (``percentile(values, 50)`` would report the lower)."""
    return statistics.median(values) if values else math.nan


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0-100) by nearest rank; ``values`` need not be sorted."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def _num(x: float | None) -> str:
    if x is None:
        return ""
    if x != x:  # NaN
        return "nan"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}" if abs(x) >= 0.1 else f"{x:.3f}"


def _ratio(r: float | None) -> str:
    if r is None:
        return ""
    return f"{r:.3f}x" if r < 0.1 else f"{r:.2f}x"


def table(rows: Sequence[Row]) -> str:
    """A fixed-width text table of ``rows`` plus the anchors' notes."""
    head = ("bench", "metric", "value", "unit", "goal", "ok", "anchor", "anchor value",
            "ratio")
    cells = [head]
    for r in rows:
        goal = f"{r.goal.op} {_num(r.goal.limit)}" if r.goal else ""
        ok = "" if r.met is None else ("yes" if r.met else "NO")
        cells.append((r.bench, r.metric, _num(r.value), r.unit, goal, ok, r.anchor or "",
                      _num(r.anchor_value), _ratio(r.ratio)))
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    numeric = {2, 7, 8}
    lines = []
    for n, c in enumerate(cells):
        lines.append("  ".join(
            c[i].rjust(widths[i]) if i in numeric else c[i].ljust(widths[i])
            for i in range(len(head))
        ).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    notes = [f"  [{r.bench}/{r.metric}] {r.note}" for r in rows if r.note]
    if notes:
        lines += ["", "notes:", *notes]
    return "\n".join(lines)


def write_json(name: str, rows: Sequence[Row], params: dict[str, object]) -> Path:
    """Write ``bench/results/<name>.json`` (or into ``$TICKETHUB_BENCH_RESULTS``) and
    return its path."""
    folder = Path(os.environ.get(RESULTS_ENV) or RESULTS)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    payload = {
        "bench": name,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": _cpus()},
        "params": params,
        "rows": [r.as_dict() for r in rows],
    }
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path


def _cpus() -> int | None:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
