"""One provider on one unit: every statistic a leaderboard row shows, and the ranking of rows.

The dashboard calls `summarize` once per (provider, unit) when results are published; the pages
read what it returns. Pure: numpy arrays in, JSON-safe values out.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from stats import bars, estimators, scores

MAX_DERIVED_STAGES = 8  # 2^8 - 1 = 255 stage subsets precomputed per provider and unit
MAX_POINTS = 400  # per-trial points drawn per provider; beyond, evenly spaced ranks
POOLED = "pooled_median"  # many calls per trial (Latency per Call): statistics over pooled calls
# Probe readings (Isolation): summarized like a median, but untimed facts, never audited or scored.
PROBE = "probe"
TIME_UNITS = frozenset({"ms", "s", "us", "µs", "min"})  # a time median carries a 95 % interval


@dataclass(frozen=True)
class Method:
    """How a benchmark's values are summarized."""

    lower_is_better: bool = True
    statistic: str = "median"  # or POOLED
    measure_unit: str = "ms"  # only a time median carries an interval
    stages: Sequence[str] = ()  # the stages the benchmark declares, in bar order


@dataclass
class Samples:
    """The successful trials of one provider on one unit, in execution order."""

    values: np.ndarray  # the main metric of each trial
    stages: dict = field(default_factory=dict)  # stage -> per-trial values (NaN: not recorded)
    costs: np.ndarray = field(default_factory=lambda: np.array([]))  # NaN where not recorded
    calls: list = field(default_factory=list)  # pooled calls per trial (POOLED only)


def summarize(samples: Samples, method: Method) -> dict:
    """The row's statistics: n, median with its interval, tail, mean, mean cost, stage medians
    and bar segments, the stage costs, the distribution, and the derived views of every stage
    subset."""
    values = samples.values
    row: dict[str, Any] = {
        "n": int(values.size),
        "median": None,
        "ci_low": None,
        "ci_high": None,
        "tail": None,
        "tail_kind": None,
        "mean": None,
        "mean_cost_usd": None,
        "cost_ci_low": None,
        "cost_ci_high": None,
        "stage_medians": {},
        "segments": [],
        "scale": None,
        "stage_costs": None,
        "distribution": None,
        "derived": {},
    }
    if values.size == 0:
        return row
    lower = method.lower_is_better
    row.update(center(samples, method))
    if method.statistic == POOLED:
        (tail, tail_kind), mean = pooled_tail_and_mean(samples.calls, lower)
    else:
        tail, tail_kind = estimators.tail(values, lower)
        mean = estimators.mean(values)
    row.update(
        tail=tail,
        tail_kind=tail_kind,
        mean=mean,
        distribution=distribution(values),
    )
    costs = samples.costs
    if costs.size and np.isfinite(costs).all():
        row["mean_cost_usd"] = finite_or_none(costs.mean())
        # The mean cost per success carries its own 95 % interval, drawn as the median's.
        row["cost_ci_low"], row["cost_ci_high"] = estimators.bootstrap_mean_ci(costs)
    recorded = [s for s in method.stages if np.isfinite(samples.stages[s]).any()]
    if recorded:
        columns = {s: samples.stages[s] for s in recorded}
        # numpy arrays serve where the bar functions declare sequences of floats.
        bar = bars.stacked_bar(cast(Sequence[float], values), columns)
        row["stage_medians"] = {s.stage: s.median for s in bar.segments}
        row["segments"] = [
            {"stage": s.stage, "median": s.median, "width": s.width} for s in bar.segments
        ]
        row["scale"] = bar.scale
        # The Cost view's bar: the shown cost (mean cost per success) shared by stage means.
        cost_bar = bars.stage_costs(columns, row["mean_cost_usd"])
        row["stage_costs"] = cost_bar.to_dict() if cost_bar else None
        if len(method.stages) <= MAX_DERIVED_STAGES:
            row["derived"] = derived_views(columns, recorded, lower)
    return row


def center(samples: Samples, method: Method) -> dict:
    """n, the median and its 95 % interval, as `summarize` gives them: all a history point
    shows, without the tail, costs, stage bars and derived views that cost the rest.

    Under the pooled statistic (Latency per Call) the median is over the pooled calls of the
    successful trials and the interval resamples whole trials."""
    values = samples.values
    if values.size == 0:
        return {"n": 0, "median": None, "ci_low": None, "ci_high": None}
    interval: tuple[float | None, float | None]
    if method.statistic == POOLED:
        calls = cast(Sequence[Sequence[float]], samples.calls)
        median = estimators.median(np.concatenate(samples.calls))
        interval = estimators.pooled_bootstrap_median_ci(calls)
    else:
        median = estimators.median(values)
        interval = estimators.bootstrap_median_ci(values)
    if method.measure_unit not in TIME_UNITS:
        interval = (None, None)  # the methodology gives an interval to the time median only
    return {"n": int(values.size), "median": median, "ci_low": interval[0], "ci_high": interval[1]}


def pooled_tail_and_mean(calls: list[np.ndarray], lower: bool):
    """Latency per Call's tail and mean over the pooled calls of the successful trials; the
    tail keeps the 20-trial floor, counted in trials.

    Below the floor the tail is the single worst trial, as for any benchmark, and a trial's value
    under this statistic is the lower median of its own calls: the slowest single call would be
    one call, not one trial, and far more extreme.

    Returns ((tail, tail_kind), mean)."""
    pooled = np.concatenate(calls)
    if len(calls) >= estimators.TAIL_FLOOR:
        tail = estimators.tail(pooled, lower)
    else:
        tail = estimators.tail([estimators.median(c) for c in calls], lower)
    return tail, estimators.mean(pooled)


def distribution(values: np.ndarray) -> dict:
    """Box-plot quartiles (nearest rank) and up to MAX_POINTS per-trial points."""
    ordered = np.sort(values)
    if ordered.size > MAX_POINTS:
        # Evenly spaced ranks keep the shape of the distribution with a bounded page size.
        picks = np.linspace(0, ordered.size - 1, MAX_POINTS).round().astype(int)
        points = ordered[picks]
    else:
        points = ordered
    return {
        "min": float(ordered[0]),
        "p25": estimators.percentile(ordered, 25),
        "p50": estimators.percentile(ordered, 50),
        "p75": estimators.percentile(ordered, 75),
        "max": float(ordered[-1]),
        "points": [float(v) for v in points],
        "points_shown": int(points.size),
    }


def derived_available(stages: Sequence[str]) -> bool:
    """Whether a benchmark with these stages gets precomputed derived views."""
    return 0 < len(stages) <= MAX_DERIVED_STAGES


def derived_key(selected) -> str:
    """The key of a stage subset in the precomputed derived views (and in the page's URL)."""
    return "+".join(selected)


def derived_keys(stages: Sequence[str]) -> list[str]:
    """The key of every non-empty subset of `stages`, in the order derived_views makes them."""
    return [
        derived_key(selected)
        for size in range(1, len(stages) + 1)
        for selected in itertools.combinations(stages, size)
    ]


def derived_views(columns: dict[str, np.ndarray], stages: list[str], lower: bool) -> dict:
    """Every non-empty subset of stages, summarized from per-trial sums (no interval)."""
    views = {}
    for size in range(1, len(stages) + 1):
        for selected in itertools.combinations(stages, size):
            view = bars.derived_view(
                cast(Mapping[str, Sequence[float | None]], columns), list(selected), lower
            )
            views[derived_key(selected)] = {
                "trials": view.trials,
                "median": view.median,
                "tail": view.tail,
                "tail_kind": view.tail_label,
            }
    return views


def rank_rows(rows: list[dict], key: str, lower: bool) -> None:
    """Rank the rows marked "ranked" on `key` (ties share the better rank), unmark those
    without a value, and order the table: ranked first by rank, then by provider."""
    eligible = {r["provider"]: r[key] for r in rows if r["ranked"] and r[key] is not None}
    order = scores.rank({p: -v if lower else v for p, v in eligible.items()})
    for row in rows:
        row["rank"] = order.get(row["provider"])
        if row["provider"] not in order:
            row["ranked"] = False
    rows.sort(key=lambda r: (r["rank"] is None, r["rank"] or 0, r["provider"]))


def finite_or_none(value):
    """JSON-safe float: None for missing or non-finite values."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def probe_reading(values) -> dict:
    """One probe on one provider: the lower median of its readings over the successful trials,
    with their range, so a reading that varied between trials shows it."""
    x = estimators.as_values(values, "probe readings")
    return {
        "n": int(x.size),
        "median": estimators.median(x),
        "min": float(x.min()),
        "max": float(x.max()),
    }
