"""Per-unit estimators: nearest-rank percentiles, the lower median, the tail, the mean and the
percentile-bootstrap interval of the median (docs/methodology.md, "Statistics")."""

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

TAIL_FLOOR = 20  # below this many successful trials the tail is the single worst trial
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
CI_LEVEL = 95


def as_values(values, what: str = "values") -> np.ndarray:
    """Return `values` as a 1-D float array, refusing empty, NaN and infinite input."""
    x = np.asarray(values, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {x.shape}")
    if x.size == 0:
        raise ValueError(f"{what} is empty: a statistic needs at least one successful trial")
    if not np.isfinite(x).all():
        raise ValueError(f"{what} contains NaN or infinite values; pass successful trials only")
    return x


def nearest_rank(p, n: int) -> int:
    """The 1-based rank r = max(1, ceil(p/100 * n)), computed exactly.

    `Fraction(str(p))` reads p as the decimal the caller wrote, so 7 * 100 / 100 is exactly 7; the
    float formula gives 8 for p = 7, n = 100 because 0.07 * 100 = 7.000000000000001.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    exact = Fraction(str(p))
    if not 0 <= exact <= 100:
        raise ValueError(f"p must be between 0 and 100, got {p}")
    return max(1, math.ceil(exact * n / 100))


def percentile(values, p) -> float:
    """Nearest-rank percentile p (0 to 100) of the values."""
    x = np.sort(as_values(values))
    return float(x[nearest_rank(p, x.size) - 1])


def median(values) -> float:
    """The lower median: the smallest value with at least half of the values at or below it."""
    return percentile(values, 50)


def tail(values, lower_is_better: bool = True) -> tuple[float, str]:
    """The worse side of the spread and its label.

    p95 where lower is better, p5 where higher is better; below 20 values the single worst value,
    labelled Slowest (time) or Lowest (throughput and rates).
    """
    x = as_values(values)
    if x.size < TAIL_FLOOR:
        if lower_is_better:
            return float(x.max()), "Slowest"
        return float(x.min()), "Lowest"
    if lower_is_better:
        return percentile(x, 95), "p95"
    return percentile(x, 5), "p5"


def mean(values) -> float:
    """Arithmetic mean over all values; fsum keeps the sum correctly rounded."""
    x = as_values(values)
    return math.fsum(x.tolist()) / x.size


def _lower_median_rows(samples: np.ndarray) -> np.ndarray:
    # Rank ceil(n/2) is 0-based index (n-1)//2. Small integer ranks (8 or 16 bits) sort by radix
    # in linear time, several times faster than a partition; wider values are partitioned.
    k = (samples.shape[1] - 1) // 2
    if samples.dtype.kind == "u" and samples.dtype.itemsize <= 2:
        return np.sort(samples, axis=1, kind="stable")[:, k]
    return np.partition(samples, k, axis=1)[:, k]


def _interval(medians: np.ndarray) -> tuple[float, float]:
    # Nearest rank on the sorted medians: ranks 250 and 9750 of 10000, no interpolation.
    low_rank = nearest_rank(Fraction(100 - CI_LEVEL, 2), medians.size)
    high_rank = nearest_rank(Fraction(100 + CI_LEVEL, 2), medians.size)
    ends = np.partition(medians, [low_rank - 1, high_rank - 1])
    return float(ends[low_rank - 1]), float(ends[high_rank - 1])


def draws_interval(draws: np.ndarray) -> tuple[float, float]:
    """95 % interval of a figure computed from the 10000 bootstrap draws of its inputs, with the
    same nearest-rank ends as the median's."""
    x = as_values(draws, what="bootstrap draws")
    return _interval(x.copy())


def bootstrap_medians(values) -> np.ndarray:
    """The 10000 resampled lower medians, in draw order.

    Drawn exactly as `rng = default_rng(0); rng.integers(0, n, size=(10000, n))` so anyone can
    reproduce a published interval; scipy.stats.bootstrap with rng=default_rng(0) draws the same.
    """
    x = as_values(values)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    idx = rng.integers(0, x.size, size=(BOOTSTRAP_RESAMPLES, x.size))
    # The median of a resample is the value at the median of its ranks, so the 10000 x n copy
    # and the partition run on small integer ranks instead of float64 values.
    order = np.argsort(x, kind="stable")
    ranks = np.empty(x.size, dtype=np.min_scalar_type(x.size))
    ranks[order] = np.arange(x.size)
    return x[order][_lower_median_rows(ranks[idx])]


def bootstrap_median_ci(values) -> tuple[float, float]:
    """95 % percentile-bootstrap interval of the lower median (nearest-rank ends)."""
    return _interval(bootstrap_medians(values))


def bootstrap_means(values) -> np.ndarray:
    """The 10000 resampled means, in draw order: the same draws as the median's (seed 0,
    `rng.integers(0, n, size=(10000, n))`), each row's arithmetic mean."""
    x = as_values(values)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    idx = rng.integers(0, x.size, size=(BOOTSTRAP_RESAMPLES, x.size))
    out = np.empty(BOOTSTRAP_RESAMPLES)
    chunk = max(1, 2_000_000 // x.size)  # a few tens of MB of resampled values at a time
    for start in range(0, BOOTSTRAP_RESAMPLES, chunk):
        out[start : start + chunk] = x[idx[start : start + chunk]].mean(axis=1)
    return out


def bootstrap_mean_ci(values) -> tuple[float, float]:
    """95 % percentile-bootstrap interval of the mean (nearest-rank ends): the interval of the
    mean cost per success."""
    return _interval(bootstrap_means(values))


def _pooled_trials(trials: Sequence[Sequence[float]]) -> list[np.ndarray]:
    if len(trials) == 0:
        raise ValueError("trials is empty: the pooled bootstrap needs at least one trial")
    return [as_values(t, what=f"trial {i}") for i, t in enumerate(trials)]


def pooled_bootstrap_medians(trials: Sequence[Sequence[float]]) -> np.ndarray:
    """The 10000 lower medians of pooled calls, resampling whole trials.

    Calls inside one sandbox are not independent, so each resample draws m trials with replacement
    (`rng.integers(0, m, size=(10000, m))`) and pools every call of the drawn trials.
    """
    arrays = _pooled_trials(trials)
    m = len(arrays)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    idx = rng.integers(0, m, size=(BOOTSTRAP_RESAMPLES, m))
    # Sort every call once; a resample is then a multiplicity per trial, and its lower median is
    # the first sorted call where the cumulative multiplicity passes the median's 0-based index.
    calls = np.concatenate(arrays)
    owner = np.repeat(np.arange(m), [a.size for a in arrays])
    order = np.argsort(calls, kind="stable")
    calls, owner = calls[order], owner[order]
    sizes = np.array([a.size for a in arrays])
    out = np.empty(BOOTSTRAP_RESAMPLES)
    chunk = max(1, 2_000_000 // max(calls.size, 1))  # bound memory to a few tens of MB
    for start in range(0, BOOTSTRAP_RESAMPLES, chunk):
        rows = idx[start : start + chunk]
        counts = np.zeros((rows.shape[0], m), dtype=np.int64)
        np.add.at(counts, (np.arange(rows.shape[0])[:, None], rows), 1)
        k = (counts @ sizes - 1) // 2
        cumulative = np.cumsum(counts[:, owner], axis=1)
        first = (cumulative > k[:, None]).argmax(axis=1)
        out[start : start + chunk] = calls[first]
    return out


def pooled_bootstrap_median_ci(trials: Sequence[Sequence[float]]) -> tuple[float, float]:
    """95 % interval of the pooled lower median, resampling whole trials."""
    return _interval(pooled_bootstrap_medians(trials))
