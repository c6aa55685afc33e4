"""The lock-free series updated on the event loop: what a scrape reads of them."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from tickethub.ops.series import LoopGauge, LoopHistogram


def _lines(registry: CollectorRegistry) -> list[str]:
    return [line for line in generate_latest(registry).decode().splitlines()
            if not line.startswith("#")]


def test_a_loop_gauge_counts_each_label_value_up_and_down() -> None:
    registry = CollectorRegistry()
    gauge = LoopGauge("parked", "Parked.", "door", ("wait", "sse"), registry)
    gauge.inc("wait")
    gauge.inc("wait")
    gauge.inc("sse")
    gauge.dec("wait")
    assert _lines(registry) == ['parked{door="wait"} 1.0', 'parked{door="sse"} 1.0']


def test_a_loop_histogram_has_cumulative_buckets_whose_bounds_are_inclusive() -> None:
    registry = CollectorRegistry()
    histogram = LoopHistogram("wake_seconds", "Wake.", (0.5, 0.1, 1.0), registry)
    for value in (0.05, 0.1, 0.3, 1.0, 7.0):
        histogram.observe(value)
    assert _lines(registry) == [
        'wake_seconds_bucket{le="0.1"} 2.0',  # 0.05 and 0.1 itself
        'wake_seconds_bucket{le="0.5"} 3.0',
        'wake_seconds_bucket{le="1.0"} 4.0',
        'wake_seconds_bucket{le="+Inf"} 5.0',
        "wake_seconds_count 5.0",
        "wake_seconds_sum 8.45",
    ]
