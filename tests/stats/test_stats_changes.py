"""Changes between two runs of a series (stats.changes): the audit's rank test, corrected over
the publication, flagged only at the minimum effect."""

import numpy as np
import pytest

from stats import changes


def test_a_large_significant_change_is_flagged_and_a_small_one_is_not():
    rng = np.random.default_rng(1)
    base = rng.lognormal(np.log(100), 0.05, size=30)
    slower = base * 1.25
    slightly = base * 1.05  # significant (the same draws, shifted) but under 15 %
    found = changes.flag(
        [changes.change(base, slower), changes.change(base, slightly)], [True, True]
    )
    assert [c["flagged"] for c in found] == [True, False]
    assert found[0]["direction"] == "slower" and found[0]["percent"] == pytest.approx(25, abs=1)
    assert found[1]["q"] < 0.05  # significant, yet below the minimum effect
    assert changes.describe(found[0], "create", "run-1").startswith("create 25 % slower than run")


def test_the_correction_counts_every_comparison():
    rng = np.random.default_rng(2)
    a = rng.lognormal(0, 0.3, size=8)
    b = a * 1.2 * rng.lognormal(0, 0.3, size=8)
    alone = changes.flag([changes.change(a, b)], [True])[0]["q"]
    crowd = [changes.change(a, b)] + [
        changes.change(a, a * rng.lognormal(0, 0.3, 8)) for _ in range(9)
    ]
    assert changes.flag(crowd, [True] * 10)[0]["q"] >= alone


def test_all_tied_values_cannot_be_tested():
    found = changes.flag([changes.change([5.0] * 5, [5.0] * 5)], [False])[0]
    assert found["q"] is None and not found["flagged"]


def test_on_a_higher_is_better_metric_a_drop_is_lower():
    found = changes.flag(
        [changes.change([100.0, 101, 102, 103] * 5, [70.0, 71, 72, 73] * 5)], [False]
    )[0]
    assert found["direction"] == "lower" and found["flagged"]
