"""Multi-unit workload values: geometric mean over the unit set with missing-unit substitution,
and the Overview composites (docs/methodology.md, "Workload value")."""

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import numpy as np
from scipy.stats import gmean

WORST_WORD = {"time": "slowest time", "cost": "highest cost"}


@dataclass(frozen=True)
class Substitution:
    unit: str
    value: float
    note: str


@dataclass(frozen=True)
class WorkloadValue:
    """A provider's workload value; `value` is None when it completed no unit."""

    value: float | None
    units: int  # |U|, the size of the unit set the geometric mean runs over
    substitutions: list[Substitution] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "units": self.units,
            "substitutions": [s.__dict__ for s in self.substitutions],
        }


def _present(value: float | None) -> TypeGuard[float]:
    return value is not None and math.isfinite(value)


def positive_gmean(values: Iterable[float], what: str = "values") -> float:
    """Geometric mean of positive finite values.

    scipy's gmean returns 0 for a zero and nan for a negative value without complaint, so every
    value is checked first.
    """
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        raise ValueError(f"{what}: a geometric mean needs at least one value")
    if not (np.isfinite(x).all() and (x > 0).all()):
        raise ValueError(f"{what}: a geometric mean needs positive finite values, got {x.tolist()}")
    return float(gmean(x))


def unit_set(unit_values: Mapping[str, Mapping[str, float | None]]) -> list[str]:
    """U: the units completed by at least one provider, in first-seen order."""
    units: dict[str, None] = {}
    for per_unit in unit_values.values():
        for unit, value in per_unit.items():
            if _present(value):
                units[unit] = None
    return list(units)


def workload_values(
    unit_values: Mapping[str, Mapping[str, float | None]], kind: str = "time"
) -> dict[str, WorkloadValue]:
    """Workload value per provider from {provider: {unit: statistic or None}}.

    Time and cost are lower-is-better: a missing unit takes the highest value any provider
    recorded on it, so a provider cannot improve its value by failing a unit.
    """
    if kind not in WORST_WORD:
        raise ValueError(f"kind must be 'time' or 'cost', got {kind!r}")
    units = unit_set(unit_values)
    worst = {}
    for unit in units:
        seen = [x for v in unit_values.values() if _present(x := v.get(unit))]
        if min(seen) <= 0:
            raise ValueError(f"unit {unit!r}: {kind} values must be positive, got {min(seen)}")
        worst[unit] = max(seen)
    result = {}
    for provider, per_unit in unit_values.items():
        if not any(_present(per_unit.get(u)) for u in units):
            result[provider] = WorkloadValue(value=None, units=len(units))
            continue
        values, substitutions = [], []
        for unit in units:
            own = per_unit.get(unit)
            if _present(own):
                values.append(own)
                continue
            values.append(worst[unit])
            note = (
                f"No successful trials on {unit}: the {WORST_WORD[kind]} observed on it "
                f"({worst[unit]:g}) is used."
            )
            substitutions.append(Substitution(unit=unit, value=worst[unit], note=note))
        value = positive_gmean(values, what=f"workload value of {provider}")
        result[provider] = WorkloadValue(value, len(units), substitutions)
    return result


def composite(workload_values_in_scope: Iterable[float]) -> float:
    """Composite Workload Time or Cost: unweighted geometric mean across workload values."""
    return positive_gmean(workload_values_in_scope, what="composite")


def composites(by_provider: Mapping[str, Mapping[str, float | None]]) -> dict[str, float | None]:
    """Composite per provider from {provider: {workload: value or None}}.

    The methodology defines no substitution across workloads, so a provider missing any workload
    in scope gets no composite (None) rather than one over a smaller set.
    """
    workloads = {w for per in by_provider.values() for w in per}
    out: dict[str, float | None] = {}
    for provider, per in by_provider.items():
        present = [v for w in workloads if _present(v := per.get(w))]
        out[provider] = composite(present) if len(present) == len(workloads) else None
    return out
