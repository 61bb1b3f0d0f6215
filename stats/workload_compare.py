"""Two providers compared on a multi-unit workload's whole-workload value (the geometric mean of
its unit medians), with the same verdict rules as one unit (stats.compare): a winner needs the
ratio's 95 % bootstrap interval to exclude 1 and a difference at least the detectable one.

Over the units both providers completed the ratio of their workload values is the geometric mean
of the unit ratios (a unit only one completed takes a substituted value on the board, which says
nothing about the other provider's speed, so it is left out and the count of units said).

The interval resamples each unit independently: the r-th draw of the workload ratio is the
geometric mean of the units' r-th resampled ratios, each unit's draws shuffled by a permutation
seeded with its position, so that units do not share their random draws (stats.compare draws
every unit from the same uniforms). The detectable difference of a mean of K independent unit
log-ratios is sqrt(sum of d_u^2) / K, from each unit's detectable difference d_u; if any unit has
none (too few trials, or no spread), the interval decides alone, as on one unit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stats import compare, estimators


@dataclass(frozen=True)
class UnitSeries:
    """One unit both providers completed: each one's values and resampled medians."""

    values_a: np.ndarray
    values_b: np.ndarray
    draws_a: np.ndarray
    draws_b: np.ndarray


def workload_comparison(
    units: list[UnitSeries], lower_is_better: bool, reason: str = ""
) -> compare.Comparison | None:
    """The whole-workload comparison of a and b over `units` (None without any). Its medians
    are the two workload values over these units; n counts the units."""
    if not units:
        return None
    medians_a = np.array([estimators.median(u.values_a) for u in units])
    medians_b = np.array([estimators.median(u.values_b) for u in units])
    value_a, value_b = _gmean(medians_a), _gmean(medians_b)
    positive = all(u.draws_a.min() > 0 and u.draws_b.min() > 0 for u in units)
    if reason or not positive:
        return compare.Comparison(
            n_a=len(units),
            n_b=len(units),
            median_a=value_a,
            median_b=value_b,
            ratio=None,
            ci_low=None,
            ci_high=None,
            detectable_percent=None,
            verdict=compare.NOT_COMPARABLE,
            reason=reason or "a median of zero or less has no ratio",
        )
    logs = np.zeros(units[0].draws_a.size)
    for position, u in enumerate(units):
        order = np.random.default_rng(compare.SEED + 1 + position).permutation(logs.size)
        logs += np.log(u.draws_b[order] / u.draws_a[order])
    ratios = np.exp(logs / len(units))
    low, high = compare.ratio_interval(np.ones_like(ratios), ratios)
    detectable = _detectable(units)
    verdict = compare.verdict_of(value_a, value_b, low, high, detectable, lower_is_better)
    return compare.Comparison(
        n_a=len(units),
        n_b=len(units),
        median_a=value_a,
        median_b=value_b,
        ratio=value_b / value_a,
        ci_low=low,
        ci_high=high,
        detectable_percent=detectable,
        verdict=verdict,
        reason="",
    )


def _gmean(values: np.ndarray) -> float:
    return float(np.exp(np.log(values).mean())) if (values > 0).all() else 0.0


def _detectable(units: list[UnitSeries]) -> float | None:
    found = [compare.detectable_percent(u.values_a, u.values_b) for u in units]
    if any(d is None for d in found):
        return None
    return math.sqrt(sum(d * d for d in found if d is not None)) / len(units)
