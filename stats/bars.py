"""Stacked stage bars and derived views (docs/methodology.md, "Stage segments and derived views").

Stage and component values come as parallel per-trial sequences: position i of every sequence is
trial i. A missing value is None or NaN.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

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

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class CostSegment:
    stage: str
    cost: float  # the label: shown cost x stage median / total median (unscaled, as Time's)
    width: float  # the plotted width: cost x the Time bar's scale


@dataclass(frozen=True)
class CostBar:
    """The Cost view's stacked bar: the Time bar in cost units, scaled the same way."""

    total_cost: float  # the shown cost, which the segments fill
    scale: float  # the Time bar's scale: total median / sum of stage medians
    segments: list[CostSegment]

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class DerivedView:
    """Summary of per-trial subset sums; no confidence interval by design."""

    selected: list[str]
    trials: int  # trials where every selected component was valid
    median: float | None
    tail: float | None
    tail_label: str | None

    def to_dict(self) -> dict:
        return asdict(self)


def _floats(values: Sequence[float | None]) -> np.ndarray:
    # numpy reads None as NaN with dtype=float; one C loop instead of a Python one per value.
    return np.asarray(values, dtype=float)


def _valid(values: Sequence[float | None]) -> np.ndarray:
    x = _floats(values)
    return x[np.isfinite(x)]


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


def stage_costs(bar: StackedBar, cost: float | None) -> CostBar | None:
    """Each stage's cost: the shown cost times that stage's share of the Time bar under the same
    statistic (stage median / total median), with the Time bar's scaling: the segments' widths
    fill the shown cost while their labels keep the unscaled stage costs.

    None when there is nothing to share: no cost (None or NaN), no segment, or a Time bar whose
    total median is 0. A stage whose median is 0 costs 0.
    """
    if cost is None or math.isnan(cost) or not bar.segments or not bar.total_median > 0:
        return None
    if math.isinf(cost) or cost < 0:
        raise ValueError(f"a shown cost must be finite and at least 0, not {cost!r}")
    per_time = cost / bar.total_median
    segments = [
        CostSegment(s.stage, s.median * per_time, s.median * per_time * bar.scale)
        for s in bar.segments
    ]
    return CostBar(total_cost=float(cost), scale=bar.scale, segments=segments)


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
