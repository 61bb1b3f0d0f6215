import math
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from stats import estimators as est

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
samples = st.lists(finite, min_size=1, max_size=60)


def test_it_takes_rank_7_of_100_at_p_7_where_floats_say_8():
    assert 0.07 * 100 > 7  # the float trap the exact ceiling avoids
    assert est.percentile(range(1, 101), 7) == 7


def test_it_reads_decimal_percentiles_exactly():
    # 64.4 x 250 / 100 is 161 exactly; the float product 64.4 * 250 carries an error upward.
    assert math.ceil(64.4 * 250 / 100) == 162
    assert est.percentile(range(1, 251), 64.4) == 161


def test_it_uses_rank_one_at_p_zero_and_the_maximum_at_p_100():
    assert est.percentile([5, 3, 9], 0) == 3
    assert est.percentile([5, 3, 9], 100) == 9


def test_it_takes_the_lower_median():
    assert est.median([4, 1, 3, 2]) == 2
    assert est.median([3, 1, 2]) == 2
    assert est.median([7]) == 7


def test_it_reports_p95_and_p5_from_20_trials():
    values = range(1, 21)
    assert est.tail(values) == (19, "p95")
    assert est.tail(values, lower_is_better=False) == (1, "p5")


def test_it_reports_the_single_worst_trial_below_20_trials():
    values = list(range(1, 20))
    assert est.tail(values) == (19, "Slowest")
    assert est.tail(values, lower_is_better=False) == (1, "Lowest")


def test_it_keeps_the_mean_correctly_rounded():
    assert est.mean([1, 2, 3, 4]) == 2.5
    assert est.mean([0.1] * 10) == 0.1  # np.mean gives 0.09999999999999999


def test_it_draws_the_published_interval_for_values_1_to_141():
    assert est.bootstrap_median_ci(np.arange(1, 142)) == (60.0, 82.0)


def test_it_gives_a_point_interval_for_constant_or_single_values():
    assert est.bootstrap_median_ci([3.5] * 12) == (3.5, 3.5)
    assert est.bootstrap_median_ci([2.0]) == (2.0, 2.0)


@pytest.mark.parametrize(
    "bad, message",
    [([], "empty"), ([1.0, math.nan], "NaN"), ([1.0, math.inf], "infinite"), ([[1.0]], "one-dim")],
)
def test_it_refuses_empty_nan_infinite_and_nested_input(bad, message):
    for fn in (est.median, est.mean, est.bootstrap_median_ci, lambda v: est.percentile(v, 50)):
        with pytest.raises(ValueError, match=message):
            fn(bad)


def test_it_refuses_percentiles_outside_0_to_100():
    with pytest.raises(ValueError, match="between 0 and 100"):
        est.percentile([1, 2], 101)


def test_it_pools_trials_by_resampling_whole_trials():
    trials = [[1, 2, 3], [4, 5], [6], [7, 8, 9, 10]]
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 4, size=(10_000, 4))
    naive = []
    for row in idx:
        pooled = np.sort(np.concatenate([trials[i] for i in row]))
        naive.append(pooled[(pooled.size - 1) // 2])
    assert np.array_equal(est.pooled_bootstrap_medians(trials), naive)
    ordered = np.sort(naive)
    assert est.pooled_bootstrap_median_ci(trials) == (ordered[249], ordered[9749])


def test_it_refuses_an_empty_or_invalid_pooled_trial():
    with pytest.raises(ValueError, match="empty"):
        est.pooled_bootstrap_median_ci([])
    with pytest.raises(ValueError, match="trial 1"):
        est.pooled_bootstrap_median_ci([[1.0], []])


@settings(deadline=None)
@given(samples)
def test_it_agrees_with_statistics_median_low(values):
    assert est.median(values) == statistics.median_low(values)


@settings(deadline=None)
@given(samples, st.integers(min_value=0, max_value=100))
def test_it_matches_integer_nearest_rank(values, p):
    n = len(values)
    rank = max(1, -(-p * n // 100))  # exact integer ceiling
    assert est.percentile(values, p) == sorted(values)[rank - 1]


@settings(deadline=None)
@given(samples, st.integers(min_value=1, max_value=100))
def test_it_agrees_with_numpy_inverted_cdf_away_from_exact_ranks(values, p):
    # numpy's float formula only goes wrong where p x n / 100 is an integer.
    if (p * len(values)) % 100 != 0:
        expected = np.percentile(values, p, method="inverted_cdf")
        assert est.percentile(values, p) == expected


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=500), min_size=2, max_size=40))
def test_it_draws_the_same_resamples_as_scipy_bootstrap(values):
    x = np.asarray(values, dtype=float)

    def lower_median(s, axis):
        return np.quantile(s, 0.5, axis=axis, method="lower")

    res = sps.bootstrap(
        (x,),
        lower_median,
        n_resamples=10_000,
        method="percentile",
        rng=np.random.default_rng(0),
    )
    assert np.array_equal(res.bootstrap_distribution, est.bootstrap_medians(x))
    low, high = est.bootstrap_median_ci(x)
    ordered = np.sort(res.bootstrap_distribution)
    assert (low, high) == (ordered[249], ordered[9749])


@settings(max_examples=15, deadline=None)
@given(st.lists(finite, min_size=1, max_size=30))
def test_it_pools_single_call_trials_like_the_plain_bootstrap(values):
    trials = [[v] for v in values]
    assert np.array_equal(est.pooled_bootstrap_medians(trials), est.bootstrap_medians(values))


def test_the_mean_interval_draws_the_same_resamples_as_scipy_with_nearest_rank_ends():
    x = np.arange(1, 42, dtype=float) ** 1.5
    means = est.bootstrap_means(x)
    scipy_means = sps.bootstrap(
        (x,),
        np.mean,
        n_resamples=10_000,
        method="percentile",
        rng=np.random.default_rng(0),
        vectorized=True,
    ).bootstrap_distribution
    assert np.allclose(np.sort(means), np.sort(scipy_means), rtol=1e-12)
    ordered = np.sort(means)
    assert est.bootstrap_mean_ci(x) == (ordered[249], ordered[9749])
