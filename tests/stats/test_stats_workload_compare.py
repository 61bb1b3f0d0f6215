"""The whole-workload comparison (stats/workload_compare.py): the ratio of two providers'
geometric means of unit medians, its bootstrap interval, and the verdict rules of one unit."""

import numpy as np
import pytest

from stats import compare
from stats.workload_compare import UnitSeries, workload_comparison


def series(a: np.ndarray, b: np.ndarray) -> UnitSeries:
    first, second = compare.uniforms()
    return UnitSeries(a, b, compare.median_draws(a, first), compare.median_draws(b, second))


def noisy(centre: float, n: int = 20, seed: int = 0) -> np.ndarray:
    return centre * (1 + 0.05 * np.random.default_rng(seed).standard_normal(n))


def gmean(values) -> float:
    return float(np.exp(np.mean(np.log(values))))


def test_the_ratio_is_the_ratio_of_the_geometric_means_and_a_clear_winner_is_named():
    units = [series(noisy(c, seed=i), noisy(2 * c, seed=10 + i)) for i, c in enumerate((1, 4, 9))]
    found = workload_comparison(units, lower_is_better=True)
    medians_a = [np.sort(u.values_a)[(u.values_a.size - 1) // 2] for u in units]
    medians_b = [np.sort(u.values_b)[(u.values_b.size - 1) // 2] for u in units]
    assert found.ratio == pytest.approx(gmean(medians_b) / gmean(medians_a))
    assert found.ci_low < found.ratio < found.ci_high
    assert found.ci_low > 1.7 and found.ci_high < 2.3
    assert found.verdict == compare.A_BETTER and found.n_a == 3
    assert compare.describe(found, "A", "B", True).startswith("A faster by 2.")


def test_units_that_disagree_give_no_winner_on_the_whole_workload():
    # a is twice as fast on one unit and twice as slow on the other: the workload values tie.
    units = [series(noisy(1, seed=1), noisy(2, seed=2)), series(noisy(2, seed=3), noisy(1, seed=4))]
    found = workload_comparison(units, lower_is_better=True)
    assert found.verdict == compare.NO_DIFFERENCE
    assert found.ci_low < 1 < found.ci_high


def test_a_reason_makes_it_not_comparable_and_no_unit_gives_nothing():
    units = [series(noisy(1), noisy(2))]
    found = workload_comparison(units, True, reason="different machine size")
    assert found.verdict == compare.NOT_COMPARABLE and found.ratio is None
    assert workload_comparison([], True) is None
