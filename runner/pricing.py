"""What one trial costs, from a provider declaration's pricing table."""

from __future__ import annotations

import math

from runner.outcomes import MAX_VALUE

RATE_KEYS = ("per_vcpu_second", "per_gib_second", "per_sandbox")


def billed_seconds(seconds: float, increment_s: float, minimum_s: float) -> float:
    """Round up to the billing increment, after applying the minimum billed time."""
    seconds = max(float(seconds), float(minimum_s))
    if increment_s and increment_s > 0:
        # A tiny epsilon keeps 2.0000000001 increments from billing a third increment.
        return math.ceil(seconds / increment_s - 1e-9) * increment_s
    return seconds


def trial_cost_usd(pricing: dict, cpus: int, memory_mib: int, seconds: float) -> float | None:
    """The cost of one sandbox of `cpus` and `memory_mib` held for `seconds`.

    None when the pricing table has no rates at all (an unknown price is not a zero price).
    """
    if not pricing or not any(key in pricing for key in RATE_KEYS):
        return None
    if seconds < 0:
        raise ValueError(f"a sandbox cannot be held for a negative time ({seconds} s)")
    billed = billed_seconds(
        seconds, pricing.get("billing_increment_s", 0) or 0, pricing.get("minimum_s", 0) or 0
    )
    per_second = cpus * float(pricing.get("per_vcpu_second", 0.0)) + (memory_mib / 1024) * float(
        pricing.get("per_gib_second", 0.0)
    )
    return billed * per_second + float(pricing.get("per_sandbox", 0.0))


def refused_cost(cost: float) -> str:
    """Why `cost` (USD) cannot be stored as a trial's cost, or "" when it can.

    A pricing table with a huge, infinite or negative rate (a hostile or broken declaration or
    host price) gives a cost no statistic can sum; the raw-data format bounds every value.
    """
    if not math.isfinite(cost):
        return f"{cost} USD, not a finite number"
    if cost < 0:
        return f"{cost:g} USD, a negative cost"
    if cost > MAX_VALUE:
        return f"{cost:g} USD, above the largest value stored ({MAX_VALUE:g})"
    return ""
