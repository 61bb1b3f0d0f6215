"""Change detection between two comparable runs of one provider on one benchmark unit: the same
test and rule as the audit's checks (docs/methodology.md, "Changes between runs"). A change is
flagged only when it is both significant after Benjamini-Hochberg correction over every
comparison of the publication and at least MIN_EFFECT percent of the earlier median."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypedDict

from stats import audit, estimators
from stats.significance import bh, mann_whitney_p

# The audit's rule, imported so that the two never drift apart.
MIN_EFFECT = audit.BETWEEN_GROUPS_MIN_EFFECT  # percent of the earlier median
Q_LEVEL = audit.Q_LEVEL


class Change(TypedDict):
    n_earlier: int
    n_later: int
    median_earlier: float
    median_later: float
    percent: float
    p: float


class FlaggedChange(Change):
    q: float | None
    flagged: bool
    direction: str


def change(earlier: Sequence[float], later: Sequence[float]) -> Change:
    """The later run's median against the earlier's: the percent change and the two-sided
    Mann-Whitney p-value (NaN when every value is tied)."""
    a = estimators.as_values(earlier, "the earlier run's values")
    b = estimators.as_values(later, "the later run's values")
    before, after = estimators.median(a), estimators.median(b)
    percent = 100.0 * (after - before) / before if before else math.nan
    return {
        "n_earlier": int(a.size),
        "n_later": int(b.size),
        "median_earlier": before,
        "median_later": after,
        "percent": percent,
        "p": mann_whitney_p(b, a),
    }


def flag(
    changes: list[Change],
    lower_is_better: list[bool],
    q_level: float = Q_LEVEL,
    min_effect: float = MIN_EFFECT,
) -> list[FlaggedChange]:
    """Each change with its q-value (BH over the testable ones), whether it is flagged, and its
    direction in words ("slower", "faster", "lower", "higher")."""
    testable = [i for i, c in enumerate(changes) if not math.isnan(c["p"])]
    qs = bh([changes[i]["p"] for i in testable])
    q_of = dict(zip(testable, (float(q) for q in qs), strict=True))
    out: list[FlaggedChange] = []
    for i, (c, lower) in enumerate(zip(changes, lower_is_better, strict=True)):
        q = q_of.get(i)
        big = not math.isnan(c["percent"]) and abs(c["percent"]) >= min_effect
        up = c["percent"] > 0
        words = ("slower", "faster") if lower else ("higher", "lower")
        out.append(
            {
                **c,
                "q": q,
                "flagged": bool(q is not None and q < q_level and big),
                "direction": words[0] if up else words[1],
            }
        )
    return out


def describe(c: FlaggedChange, benchmark: str, earlier_run: str) -> str:
    """ "create 23 % slower than run X, q = 0.003"."""
    return (
        f"{benchmark} {abs(c['percent']):.0f} % {c['direction']} than run {earlier_run}, "
        f"q = {c['q']:.2g}"
    )
