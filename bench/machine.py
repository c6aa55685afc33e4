"""What the machine itself did to a measurement: the share of CPU time the hypervisor
took away (``steal`` in ``/proc/stat``).

On a shared virtual machine the same code runs at different speeds from one minute to
the next; a round that took twice as long while a quarter of the CPU was stolen says
something about the host, not the code. Benches read it around a timed round and print
it beside the time."""

from __future__ import annotations

from pathlib import Path

PROC_STAT = Path("/proc/stat")


def cpu_ticks(stat: Path = PROC_STAT) -> tuple[int, int] | None:
    """``(steal, total)`` clock ticks of all CPUs so far; ``None`` where the kernel does
    not say (not Linux, or a kernel without the field)."""
    try:
        first = stat.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not first or first[0] != "cpu" or len(first) < 9:
        return None
    ticks = [int(x) for x in first[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
    # counted in user and nice already.
    return ticks[7], sum(ticks[:8])


def steal_share(before: tuple[int, int] | None, after: tuple[int, int] | None
                ) -> float | None:
    """The share (0-1) of all CPU time between two :func:`cpu_ticks` readings that was
    stolen; ``None`` when either is unknown or no tick passed."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


def steal_words(share: float | None) -> str:
    """``"CPU steal 12%"``, or ``"CPU steal unknown"``."""
    return "CPU steal unknown" if share is None else f"CPU steal {share:.0%}"
