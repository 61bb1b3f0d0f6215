"""The audit's numerical building blocks, cross-checked against scipy and statsmodels."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from statsmodels.sandbox.stats.runs import runstest_1samp
from statsmodels.stats.power import TTestIndPower

from stats import significance as sig

small_ints = st.lists(st.integers(min_value=0, max_value=12), min_size=1, max_size=14)
floats = st.floats(min_value=0.5, max_value=1000, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(small_ints, small_ints)
def test_it_matches_scipy_mann_whitney_with_and_without_ties(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    ours = sig.mann_whitney_p(a, b)
    if np.ptp(np.r_[a, b]) == 0:
        assert math.isnan(ours)
        return
    theirs = sps.mannwhitneyu(a, b, alternative="two-sided").pvalue
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-15)


@settings(deadline=None)
@given(
    st.lists(floats, min_size=1, max_size=9, unique=True),
    st.lists(floats, min_size=9, max_size=30, unique=True),
)
def test_it_matches_scipy_exact_mann_whitney_for_a_small_group(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if np.intersect1d(a, b).size:
        return
    theirs = sps.mannwhitneyu(a, b, alternative="two-sided").pvalue
    assert sig.mann_whitney_p(a, b) == pytest.approx(theirs, rel=1e-9, abs=1e-15)


def test_it_treats_an_all_tied_comparison_as_untestable():
    # scipy divides by a zero spread there: NaN without continuity correction, 1.0 with it.
    a = np.ones(6)
    assert math.isnan(sps.mannwhitneyu(a, a, use_continuity=False).pvalue)
    assert math.isnan(sig.mann_whitney_p(a, a))


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(st.lists(floats, min_size=3, max_size=40), small_ints.filter(lambda v: len(v) > 2))
)
def test_it_matches_scipy_kendall_tau_against_execution_order(values):
    y = np.asarray(values, float)
    ours = sig.kendall_p(y)
    if np.ptp(y) == 0:
        assert math.isnan(ours)
        return
    theirs = sps.kendalltau(np.arange(y.size), y).pvalue
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-15)


@settings(deadline=None)
@given(st.lists(floats, min_size=2, max_size=30))
def test_it_matches_scipy_theil_sen(values):
    y = np.asarray(values)
    x = np.arange(y.size, dtype=float)
    slope, intercept = sig.theil_sen(x, y)
    res = sps.theilslopes(y, x)
    assert slope == pytest.approx(res.slope, rel=1e-12, abs=1e-12)
    assert intercept == pytest.approx(res.intercept, rel=1e-12, abs=1e-9)


def test_it_turns_a_flat_theil_sen_slope_into_plain_zero():
    slope, _ = sig.theil_sen(np.arange(5.0), np.full(5, 3.0))
    assert math.copysign(1, slope) == 1


@settings(deadline=None)
@given(st.lists(floats, min_size=1, max_size=40))
def test_it_matches_scipy_robust_sigma(values):
    expected = sps.median_abs_deviation(values, scale="normal")
    assert sig.robust_sigma(np.asarray(values)) == pytest.approx(expected, rel=1e-12, abs=1e-12)


@settings(deadline=None)
@given(st.lists(st.integers(0, 9), min_size=1, max_size=30))
def test_it_matches_scipy_average_ranks(values):
    ranks, ties = sig.average_ranks(np.asarray(values, float))
    assert np.array_equal(ranks, sps.rankdata(values))
    assert ties.sum() == len(values)


def test_it_reports_p_one_when_runs_equal_their_expectation():
    labels = np.array([0.0, 1, 1, 0])  # 3 runs, expected 2 x 2 x 2 / 4 + 1 = 3
    assert sig.runs_test(labels) == (0.0, 1.0)
    assert runstest_1samp(labels, cutoff=0.5, correction=True)[1] < 1  # the trap avoided


def test_it_applies_benjamini_hochberg_by_hand():
    q = sig.bh([0.01, 0.04, 0.03, 0.5])
    assert q == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5])
    assert sig.bh([]).size == 0


def test_it_keeps_an_exact_q_of_005_at_005():
    # statsmodels' fdr_bh can give 0.049999999999999996 here and flip "q < 0.05".
    q = sig.bh([0.025, 0.05])
    assert q[1] == 0.05 and not q[1] < 0.05


@settings(deadline=None)
@given(st.lists(floats, min_size=2, max_size=25))
def test_it_finds_the_exact_otsu_split(values):
    s = np.sort(np.asarray(values))
    best = max(
        range(1, s.size),
        key=lambda k: k * (s.size - k) * (s[:k].mean() - s[k:].mean()) ** 2,
    )
    k = sig.otsu_split(s)
    score = k * (s.size - k) * (s[:k].mean() - s[k:].mean()) ** 2
    best_score = best * (s.size - best) * (s[:best].mean() - s[best:].mean()) ** 2
    assert score == pytest.approx(best_score, rel=1e-9, abs=1e-12)


def test_it_fits_two_separated_tiers_with_a_large_ashman_d():
    x = np.r_[np.full(10, 100.0) + np.arange(10) * 0.1, np.full(10, 200.0) + np.arange(10) * 0.1]
    lower, d = sig.two_tiers(x)
    assert lower.sum() == 10 and lower[:10].all()
    assert d > 100


def test_it_finds_a_small_ashman_d_on_one_normal_group():
    x = np.random.default_rng(0).normal(100, 5, 200)
    assert sig.two_tiers(x)[1] < 3.4


def _lag_pairs_spearman(r, batch):
    a, b = [], []
    for g in np.unique(batch):
        members = r[batch == g]
        a += list(members[:-1])
        b += list(members[1:])
    return sps.spearmanr(a, b).statistic


def test_it_measures_lag_one_rho_within_batches_like_scipy_spearman():
    rng = np.random.default_rng(3)
    r = rng.normal(size=30)
    batch = np.repeat([0, 1, 2], 10)
    rho, p = sig.lag1_rho(r, batch)
    assert rho == pytest.approx(_lag_pairs_spearman(r, batch), rel=1e-12)
    assert 0 < p <= 1


def test_it_computes_the_permutation_null_like_scipy_spearman_on_the_same_shuffles():
    r = np.random.default_rng(5).normal(size=12)
    bounds = [(0, 5), (5, 12)]
    a_pos = np.setdiff1d(np.arange(12), [4, 11])
    b_pos = np.setdiff1d(np.arange(12), [0, 5])
    shuffles = sig._shuffles(tuple(bounds), 0)
    assert shuffles.shape == (999, 12)
    assert all(set(row[:5]) == set(range(5)) for row in shuffles)  # shuffled within batches
    # scipy, one shuffle at a time, on every third shuffle: the vectorized null must agree row by
    # row, and 333 rows of each kind check that as well as all 999 would.
    rows = np.arange(0, 999, 3)
    for values in (r, np.round(r)):  # without ties (fast path) and with ties (rankdata path)
        slow = [sps.spearmanr(values[p][a_pos], values[p][b_pos]).statistic for p in shuffles[rows]]
        fast = sig._null_rhos(values, bounds, a_pos, b_pos, 0)
        assert fast.shape == (999,)
        assert fast[rows] == pytest.approx(np.nan_to_num(slow), rel=1e-9, abs=1e-12)


def test_it_gives_small_p_to_a_strongly_autocorrelated_series():
    r = np.sin(np.arange(40) * 2 * np.pi / 20)
    rho, p = sig.lag1_rho(r, np.zeros(40, dtype=int))
    assert rho > 0.9 and p < 1e-3


def test_it_reports_an_unbounded_detectable_effect_when_no_split_can_reach_alpha():
    assert 2 / math.comb(6, 3) > 0.05
    assert sig.detectable_d(3, 3, 0.05) is None


def test_it_matches_statsmodels_power_with_the_rank_test_efficiency():
    expected = TTestIndPower().solve_power(
        effect_size=None, nobs1=10 * 3 / math.pi, ratio=1.0, alpha=0.01, power=0.8
    )
    d = sig.detectable_d(10, 10, 0.01)
    assert isinstance(d, float) and d == pytest.approx(float(np.squeeze(expected)))
