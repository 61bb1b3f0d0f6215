"""Provider scores 0 to 100 and ranks at every level of the score tree
(docs/methodology.md, "Provider scores").

The tree is overall -> sections -> benchmarks -> units. Units are leaves holding each provider's
statistic; every other node's score is the arithmetic mean of its children's scores, where a child
the provider has no result in adds 0. The overall score always averages the four sections: the
methodology defines it as the mean of four scores, so a section nobody has a result in (no
provider-sourced cost anywhere) adds 0 for everyone rather than leaving the count.
"""

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

SECTIONS = ("workload_time", "workload_cost", "sandbox_operations", "machine_performance")
SECTION_LABELS = {
    "workload_time": "Workload Time Score",
    "workload_cost": "Workload Cost Score",
    "sandbox_operations": "Sandbox Operations Score",
    "machine_performance": "Machine Performance Score",
}
TIE_DECIMALS = 9  # scores equal to 9 decimals tie; float noise in a mean must not split a tie


@dataclass
class ScoreNode:
    """One node of the score tree; `scores` and `ranks` hold only providers with a score here."""

    key: str
    level: str  # "overall", "section", "benchmark" or "unit"
    label: str = ""
    children: list["ScoreNode"] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)

    def child(self, key: str) -> "ScoreNode":
        return next(c for c in self.children if c.key == key)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "level": self.level,
            "label": self.label,
            "scores": dict(self.scores),
            "ranks": dict(self.ranks),
            "children": [c.to_dict() for c in self.children],
        }


@dataclass(frozen=True)
class UnitResult:
    """One leaf input: every provider's statistic on one unit (None when it has no result)."""

    section: str
    benchmark: str
    unit: str
    values: Mapping[str, float | None]
    lower_is_better: bool = True


def _present(value: float | None) -> TypeGuard[float]:
    return value is not None and math.isfinite(value)


def unit_scores(
    values: Mapping[str, float | None], lower_is_better: bool = True
) -> dict[str, float]:
    """100 x best / own where lower is better (time, cost), 100 x own / best where higher is."""
    own = {p: float(v) for p, v in values.items() if _present(v)}
    if not own:
        return {}
    bad = {p: v for p, v in own.items() if v <= 0}
    if bad:
        raise ValueError(f"scores need positive values, got {bad}")
    if lower_is_better:
        best = min(own.values())
        return {p: 100.0 * best / v for p, v in own.items()}
    best = max(own.values())
    return {p: 100.0 * v / best for p, v in own.items()}


def mean_of_children(
    children: Iterable[Mapping[str, float]], count: int | None = None
) -> dict[str, float]:
    """Arithmetic mean over the children; a provider's missing child adds 0.

    Without `count`, a child no provider has a result in is left out of the count: a unit nobody
    completed is outside the workload's unit set, a benchmark nobody ranked is not on the board.
    With `count` (the overall score: always four sections) every child counts, scored or not.
    A provider with no result in any child has no score.
    """
    scored = [c for c in children if c]
    denominator = count if count is not None else len(scored)
    providers = {p for c in scored for p in c}
    return {p: math.fsum(c.get(p, 0.0) for c in scored) / denominator for p in providers}


def rank(scores: Mapping[str, float]) -> dict[str, int]:
    """Competition ranks, higher score first; ties share the better rank (1, 2, 2, 4)."""
    rounded = {p: round(s, TIE_DECIMALS) for p, s in scores.items()}
    ordered = sorted(rounded.values(), reverse=True)
    first_position: dict[float, int] = {}
    for position, score in enumerate(ordered, start=1):
        first_position.setdefault(score, position)
    return {p: first_position[s] for p, s in rounded.items()}


def _finish(node: ScoreNode) -> ScoreNode:
    node.ranks = rank(node.scores)
    return node


def score_tree(results: Iterable[UnitResult]) -> ScoreNode:
    """Build the scored tree: overall -> the four sections -> benchmarks -> units.

    Sections always appear in SECTIONS order (empty ones have no scores); benchmarks and units
    keep their first-seen order.
    """
    grouped: dict[str, dict[str, list[UnitResult]]] = {s: {} for s in SECTIONS}
    for r in results:
        if r.section not in grouped:
            raise ValueError(f"unknown section {r.section!r}; expected one of {SECTIONS}")
        grouped[r.section].setdefault(r.benchmark, []).append(r)
    sections = []
    for section, benchmarks in grouped.items():
        bench_nodes = []
        for benchmark, units in benchmarks.items():
            unit_nodes = [
                _finish(ScoreNode(u.unit, "unit", scores=unit_scores(u.values, u.lower_is_better)))
                for u in units
            ]
            scores = mean_of_children(n.scores for n in unit_nodes)
            bench_nodes.append(_finish(ScoreNode(benchmark, "benchmark", "", unit_nodes, scores)))
        scores = mean_of_children(n.scores for n in bench_nodes)
        label = SECTION_LABELS[section]
        sections.append(_finish(ScoreNode(section, "section", label, bench_nodes, scores)))
    overall = mean_of_children((n.scores for n in sections), count=len(SECTIONS))
    return _finish(ScoreNode("overall", "overall", "Overall Score", sections, overall))
