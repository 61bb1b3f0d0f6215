"""The audit at large n: pairwise statistics that would need n(n-1)/2 pairs switch to an
O(n log n) count (Kendall) or a seeded sample of pairs (Theil-Sen) above PAIRWISE_MAX_N."""

import numpy as np
import pytest
from scipy import stats as sps

from stats import audit
from stats import significance as sig
from tests.stats.synthetic import clean_pair


def test_it_estimates_the_trend_of_a_large_pair_from_seeded_sampled_slopes():
    n = 200_000  # every pair would be 2e10 slopes: far beyond memory
    rng = np.random.default_rng(3)
    x = np.arange(n, dtype=float)
    y = 1000 + 0.001 * x + rng.normal(0, 20, n)
    slope, intercept = sig.theil_sen(x, y)
    assert slope == pytest.approx(0.001, rel=0.02)
    assert intercept == pytest.approx(np.median(y) - slope * np.median(x))
    assert sig.theil_sen(x, y) == (slope, intercept)  # seeded: the same estimate every time


def test_it_keeps_exact_theil_sen_up_to_the_pairwise_limit():
    rng = np.random.default_rng(4)
    y = rng.lognormal(0, 0.3, sig.PAIRWISE_MAX_N)
    x = np.arange(y.size, dtype=float)
    assert sig.theil_sen(x, y)[0] == pytest.approx(sps.theilslopes(y, x).slope, rel=1e-12)


def test_it_counts_kendall_pairs_of_a_large_pair_like_scipy():
    rng = np.random.default_rng(5)
    y = np.round(rng.normal(0, 1, 100_000), 2)  # with ties
    assert sig.kendall_p(y) == pytest.approx(sps.kendalltau(np.arange(y.size), y).pvalue, rel=1e-9)


def test_it_audits_a_pair_of_100000_trials():
    frame = clean_pair(n=100_000)
    report = audit.audit(frame)
    checks = report["pairs"][0]["checks"]
    assert checks["trend"]["verdict"] == "pass"
    assert abs(checks["trend"]["effect"]) < 1.0


def test_it_uses_the_host_type_minimum_effect_setting():
    frame = clean_pair()
    other = frame["seq"] >= 14
    frame.loc[other, "cpu_model"] = "Xeon"
    frame.loc[other, "value"] *= 1.5
    settings = audit.AuditSettings(min_effect={**audit.MIN_EFFECT, "host_type": 80.0})
    check = audit.audit(frame, settings)["pairs"][0]["checks"]["host_type"]
    assert check["verdict"] == "pass" and "within 80 %" in check["reason"]
