"""``bench/report.py``: how a few turns' results are summed up."""

from __future__ import annotations

import math

from bench.report import median_of_turns, percentile


def test_the_median_of_an_even_number_of_turns_is_the_mean_of_the_middle_two() -> None:
    assert median_of_turns([2.43, 1.96, 2.10, 2.29]) == (2.10 + 2.29) / 2
    assert percentile([2.43, 1.96, 2.10, 2.29], 50) == 2.10  # nearest rank: the lower


def test_the_median_of_an_odd_number_of_turns_is_the_middle_one() -> None:
    assert median_of_turns([2.04, 2.43, 2.29, 1.96, 2.10]) == 2.10
    assert math.isnan(median_of_turns([]))
