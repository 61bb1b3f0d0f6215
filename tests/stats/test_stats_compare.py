"""Two providers compared: the exact bootstrap distribution of the lower median, the ratio's
interval, the detectable effect and the verdict in words (stats.compare)."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from stats import compare


def test_the_median_distribution_is_that_of_literal_resampling_enumerated():
    # Every one of the 5^5 resamples of five values, each equally likely.
    x = np.array([3.0, 1.0, 4.0, 1.5, 9.0])
    ordered = np.sort(x)
    medians = [np.sort(x[list(idx)])[2] for idx in itertools.product(range(5), repeat=5)]
    exact = [sum(m <= v for m in medians) / len(medians) for v in ordered]
    assert compare.median_cdf(5) == pytest.approx(exact, abs=1e-12)


def test_drawn_medians_follow_the_literal_bootstrap():
    x = np.random.default_rng(3).lognormal(5, 0.3, size=40)
    drawn = compare.median_draws(x, compare.uniforms()[0])
    rng = np.random.default_rng(11)
    literal = np.sort(x[rng.integers(0, 40, size=(10000, 40))], axis=1)[:, 19]
    assert set(drawn) <= set(x)
    # Same law: a two-sample KS test does not tell 10000 draws of each apart.
    assert scipy_stats.ks_2samp(drawn, literal).pvalue > 0.01
    assert np.quantile(drawn, [0.025, 0.5, 0.975]) == pytest.approx(
        np.quantile(literal, [0.025, 0.5, 0.975]), rel=0.02
    )


def test_the_two_providers_draw_from_independent_uniforms_of_seed_zero():
    first, second = compare.uniforms()
    rng = np.random.default_rng(0)
    assert np.array_equal(first, rng.random(10000))
    assert np.array_equal(second, rng.random(10000))


def test_the_ratio_interval_takes_nearest_ranks_250_and_9750():
    a = np.ones(10000)
    b = np.arange(1, 10001, dtype=float)[::-1]
    assert compare.ratio_interval(a, b) == (250.0, 9750.0)


def comparison(a, b, lower=True, reason=""):
    first, second = compare.uniforms()
    return compare.compare(
        a, b, compare.median_draws(a, first), compare.median_draws(b, second), lower, reason
    )


def test_a_planted_slowdown_is_found_with_its_factor():
    rng = np.random.default_rng(5)
    a = rng.lognormal(np.log(100), 0.1, size=60)
    b = 1.8 * rng.lognormal(np.log(100), 0.1, size=60)
    c = comparison(a, b)
    assert c.verdict == compare.A_BETTER
    assert c.ci_low < 1.8 < c.ci_high and c.ci_low > 1
    text = compare.describe(c, "Alpha", "Bravo", True)
    assert text.startswith("Alpha faster by 1.") and "x to " in text
    flipped = c.flipped()
    assert flipped.verdict == compare.B_BETTER
    assert (flipped.ci_low, flipped.ci_high) == pytest.approx((1 / c.ci_high, 1 / c.ci_low))
    assert compare.describe(flipped, "Bravo", "Alpha", True) == text


def test_on_a_higher_is_better_metric_the_larger_median_wins():
    rng = np.random.default_rng(6)
    a = rng.lognormal(np.log(1000), 0.05, size=30)
    b = 1.3 * rng.lognormal(np.log(1000), 0.05, size=30)
    c = comparison(a, b, lower=False)
    assert c.verdict == compare.B_BETTER
    assert compare.describe(c, "Alpha", "Bravo", False).startswith("Bravo higher by 1.")


def test_the_same_distribution_reads_as_no_detectable_difference():
    rng = np.random.default_rng(7)
    a = rng.lognormal(np.log(100), 0.1, size=40)
    b = rng.lognormal(np.log(100), 0.1, size=40)
    c = comparison(a, b)
    assert c.verdict == compare.NO_DIFFERENCE and c.ci_low < 1 < c.ci_high
    assert 0 < c.detectable_percent < 20
    text = compare.describe(c, "Alpha", "Bravo", True)
    assert text == f"no detectable difference (< {c.detectable_percent:.0f} %)"


def test_a_difference_below_the_detectable_one_is_no_difference_even_with_a_narrow_interval():
    # CPU-like: 0.13 % apart on 20 trials each with a tiny spread: the interval excludes 1, but
    # the difference is smaller than what these samples can detect.
    rng = np.random.default_rng(27)
    a = 1172.5 * (1 + rng.normal(0, 0.002, size=20))
    b = 1174.0 * (1 + rng.normal(0, 0.002, size=20))
    first, second = compare.uniforms()
    draws_a, draws_b = compare.median_draws(a, first), compare.median_draws(b, second)
    low, _ = compare.ratio_interval(draws_a, draws_b)
    c = compare.compare(a, b, draws_a, draws_b, lower_is_better=False)
    assert low > 1  # the interval alone would crown b
    assert compare.difference_percent(c.median_a, c.median_b) < c.detectable_percent
    assert c.verdict == compare.NO_DIFFERENCE
    assert compare.describe(c, "A", "B", False).startswith("no detectable difference (< ")


def test_the_detectable_effect_is_the_audits_cohen_d_times_the_pooled_robust_sigma():
    a = np.array([10.0, 11, 12, 13, 14, 15, 16, 17])
    b = np.array([12.0, 13, 14, 15, 16, 17, 18, 19])
    sigma = scipy_stats.median_abs_deviation(a, scale="normal")  # b has the same spread
    from statsmodels.stats.power import TTestIndPower

    d = TTestIndPower().solve_power(nobs1=8 * 3 / math.pi, ratio=1.0, alpha=0.05, power=0.8)
    want = 100 * float(np.squeeze(d)) * sigma / math.sqrt(13 * 15)
    assert compare.detectable_percent(a, b) == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize(
    ("a", "b"),
    [([1.0, 2.0], [3.0]), ([1.0, 2.0], [3.0, 4.0]), ([5.0, 5.0, 5.0, 5.0], [5.0, 5.0, 5.0, 5.0])],
    ids=["one trial", "too few to ever reach 5 %", "no spread"],
)
def test_no_detectable_effect_is_claimed_where_none_can_be_detected(a, b):
    assert compare.detectable_percent(a, b) is None
    c = comparison(np.array(a), np.array(b) * 1.0001)
    if c.verdict == compare.NO_DIFFERENCE:
        assert compare.describe(c, "A", "B", True) == (
            "no difference detectable at these sample sizes"
        )


def test_a_reason_makes_the_pair_not_comparable_but_keeps_its_medians():
    c = comparison(np.array([1.0, 2, 3]), np.array([4.0, 5, 6]), reason="different images")
    assert (c.verdict, c.ratio, c.median_a, c.median_b) == ("not_comparable", None, 2.0, 5.0)
    assert compare.describe(c, "A", "B", True) == "not comparable: different images"


def test_a_zero_median_has_no_ratio():
    c = comparison(np.array([0.0, 0.0, 1.0]), np.array([1.0, 2, 3]))
    assert c.verdict == compare.NOT_COMPARABLE and "zero" in c.reason


def test_the_summary_counts_each_verdict():
    line = compare.summary(["a", "a", "none", "not_comparable", "b"], "Alpha", "Bravo")
    assert line["counts"] == {"a": 2, "b": 1, "none": 1, "not_comparable": 1}
    assert line["text"] == (
        "5 comparisons: Alpha ahead on 2, Bravo ahead on 1, no detectable difference on 1, "
        "not comparable on 1"
    )


def test_pooled_draws_pair_the_second_provider_in_reverse_draw_order():
    trials = [[1.0, 2.0, 3.0], [2.0, 4.0], [5.0, 1.0, 1.0, 2.0]]
    first, second = compare.pooled_draws(trials, False), compare.pooled_draws(trials, True)
    assert np.array_equal(first[::-1], second)
