"""Every statistic stays finite on values at the raw-data schema's maximum (runner.outcomes
MAX_VALUE): a file may carry them, and a sum, mean or variance of them must not overflow."""

import json

import numpy as np

from runner.outcomes import MAX_VALUE
from stats import changes, compare
from stats.audit import audit
from stats.summary import Method, Samples, summarize
from tests.stats.synthetic import clean_pair


def at_the_bound(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return MAX_VALUE * rng.uniform(0.5, 1.0, n)


def finite_json(obj) -> str:
    """Its JSON, refusing NaN and infinity as the pages' and the API's encoders do."""
    return json.dumps(obj, allow_nan=False, default=float)


def test_a_summary_of_values_at_the_bound_is_finite():
    values = at_the_bound(40, 1)
    row = summarize(Samples(values=values, costs=values / 1e6), Method())
    finite_json(row)
    assert row["median"] <= MAX_VALUE and row["mean"] <= MAX_VALUE


def test_the_audit_of_values_at_the_bound_is_finite():
    frame = clean_pair(n=40)
    frame["value"] = at_the_bound(40, 2)
    report = audit(frame)
    finite_json(report)


def test_a_comparison_and_a_change_at_the_bound_are_finite():
    a, b = at_the_bound(30, 3), at_the_bound(30, 4)
    u_a, u_b = compare.uniforms()
    result = compare.compare(
        a, b, compare.median_draws(a, u_a), compare.median_draws(b, u_b), lower_is_better=True
    )
    assert result.ratio is not None and np.isfinite([result.ci_low, result.ci_high]).all()
    assert result.detectable_percent is None or np.isfinite(result.detectable_percent)
    assert np.isfinite(changes.change(a, b)["percent"])
