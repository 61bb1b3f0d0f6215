"""Stacked stage bars and derived views (docs/methodology.md, "Stage segments and derived views").

Stage and component values come as parallel per-trial sequences: position i of every sequence is
trial i. A missing value is None or NaN.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from stats import estimators


@dataclass(frozen=True)
class Segment:
    stage: str
    median: float  # the label: the stage's own, unscaled median
    width: float  # the plotted width: median x total median / sum of stage medians


@dataclass(frozen=True)
class StackedBar:
    total_median: float
    scale: float
    segments: list[Segment]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CostSegment:
    stage: str
    cost: float  # the label: shown cost x stage mean / sum of stage means
    width: float  # the plotted width: the same cost, since the stage costs fill the shown cost


@dataclass(frozen=True)
class CostBar:
    """The Cost view's stacked bar: the shown cost (a mean) split by the stages' means."""

    total_cost: float  # the shown cost, which the segments fill exactly
    segments: list[CostSegment]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DerivedView:
    """Summary of per-trial subset sums; no confidence interval by design."""

    selected: list[str]
    trials: int  # trials where every selected component was valid
    median: float | None
    tail: float | None
    tail_label: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _floats(values: Sequence[float | None]) -> np.ndarray:
    # numpy reads None as NaN with dtype=float; one C loop instead of a Python one per value.
    return np.asarray(values, dtype=float)


def _valid(values: Sequence[float | None]) -> np.ndarray:
    x = _floats(values)
    finite: np.ndarray = x[np.isfinite(x)]
    return finite


def stage_medians(stages: Mapping[str, Sequence[float | None]]) -> dict[str, float]:
    """Each stage's own lower median over the trials that recorded it."""
    return {stage: estimators.median(_valid(values)) for stage, values in stages.items()}


def stage_means(stages: Mapping[str, Sequence[float | None]]) -> dict[str, float]:
    """Each stage's arithmetic mean; step means sum to the total mean apart from untimed gaps."""
    return {stage: estimators.mean(_valid(values)) for stage, values in stages.items()}


def stacked_bar(total: Sequence[float], stages: Mapping[str, Sequence[float | None]]) -> StackedBar:
    """Segments that fill the total-median bar while their labels keep the real stage medians."""
    total_median = estimators.median(_valid(total))
    medians = stage_medians(stages)
    stage_sum = math.fsum(medians.values())
    # All stage medians 0 leaves nothing to scale: draw no width rather than divide by zero.
    scale = total_median / stage_sum if stage_sum > 0 else 0.0
    segments = [Segment(stage, m, m * scale) for stage, m in medians.items()]
    return StackedBar(total_median=total_median, scale=scale, segments=segments)


def stage_costs(stages: Mapping[str, Sequence[float | None]], cost: float | None) -> CostBar | None:
    """Each stage's cost: the shown cost times that stage's share under the shown cost's own
    statistic. The shown cost is a mean (cost per success), so the share is the stage's mean over
    the sum of stage means; the stage costs then add up to the shown cost, labels and widths alike.

    `stages` holds the per-trial values of the stages the Time bar draws. None when there is
    nothing to share: no cost (None or NaN), no stage, or stage means that sum to 0. A stage
    whose mean is 0 costs 0.
    """
    if cost is None or math.isnan(cost) or not stages:
        return None
    if math.isinf(cost) or cost < 0:
        raise ValueError(f"a shown cost must be finite and at least 0, not {cost!r}")
    means = stage_means(stages)
    total = math.fsum(means.values())
    if not total > 0:
        return None
    shares = {stage: cost * m / total for stage, m in means.items()}
    segments = [CostSegment(stage, c, c) for stage, c in shares.items()]
    return CostBar(total_cost=float(cost), segments=segments)


def workload_stage_costs(
    total: float | None, unit_costs: Sequence[Mapping[str, float]]
) -> dict[str, float] | None:
    """The All view's stage costs: the workload cost shared by each stage's mean share of its
    unit's stage costs, every unit the provider completed weighing the same (as in the workload
    value). The shares of each unit add up to 1, so the stage costs add up to the workload cost.

    `unit_costs` holds one {stage: cost} per completed unit; a unit whose stage costs add up to
    0 has no shares and is left out. None without a workload cost or a unit to share it by.
    """
    if total is None or math.isnan(total):
        return None
    shares = []
    for costs in unit_costs:
        unit_total = math.fsum(costs.values())
        if unit_total > 0:
            shares.append({stage: c / unit_total for stage, c in costs.items()})
    if not shares:
        return None
    stages = list(dict.fromkeys(stage for unit in shares for stage in unit))
    return {
        stage: total * math.fsum(unit.get(stage, 0.0) for unit in shares) / len(shares)
        for stage in stages
    }


def derived_view(
    components: Mapping[str, Sequence[float | None]],
    selected: Sequence[str],
    lower_is_better: bool = True,
) -> DerivedView:
    """Sum the selected components per trial, only where all of them are valid, then summarize
    the sums with the nearest-rank median and the tail (20-trial floor)."""
    if not selected:
        raise ValueError("a derived view needs at least one selected component")
    missing = [c for c in selected if c not in components]
    if missing:
        raise ValueError(f"unknown components: {missing}")
    lengths = {len(components[c]) for c in selected}
    if len(lengths) != 1:
        raise ValueError("selected components must have one value per trial (equal lengths)")
    matrix = np.array([_floats(components[c]) for c in selected])
    complete = np.isfinite(matrix).all(axis=0)
    sums = matrix[:, complete].sum(axis=0)
    if sums.size == 0:
        return DerivedView(list(selected), 0, None, None, None)
    tail, label = estimators.tail(sums, lower_is_better)
    return DerivedView(list(selected), int(sums.size), estimators.median(sums), tail, label)
