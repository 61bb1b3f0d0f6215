"""What a million RL rollouts would take, from measured numbers only (docs/methodology.md,
"What a million rollouts would take").

A rollout is one RL episode: its sandbox copy is held from restore to destroy, the RL board's
`episode_ms` (one number per unit: the geometric mean over the units of their lower medians, as
the workload value combines them). The knee of concurrency K is the burst tier with the highest
median throughput (ready sandboxes per second), the point past which more concurrent creates
stop paying. With K copies alive at once, each held e seconds, and new copies started no faster
than the burst board's throughput r at K:

    sandbox-hours = N * e / 3600
    wall hours    = N / min(K / e, r) / 3600
    cost (USD)    = N * cost_of(e)      (one copy's price for e seconds, billing rules included)

Every figure carries a 95 % interval: the formula is applied to each of the 10,000 bootstrap
draws of its inputs (the stored draws of stats.estimators, seed 0) and the interval read off
the results with the same nearest-rank ends. The draws of all inputs share that seed, so they
move together: the interval is, if anything, wider than one from independent draws.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from stats import estimators

ROLLOUTS = 1_000_000
SECONDS_PER_HOUR = 3600


def knee_tier(throughput_by_tier: Mapping[int, Sequence[float]]) -> int | None:
    """The tier with the highest median throughput over its bursts (the smallest such tier on a
    tie, since more concurrency that buys nothing is not the knee); None without any burst."""
    medians = {t: estimators.median(v) for t, v in throughput_by_tier.items() if len(v)}
    if not medians:
        return None
    best = max(medians.values())
    return min(t for t, m in medians.items() if m == best)


def project(
    episode_ms_by_unit: Mapping[str, Sequence[float]],
    knee: int,
    knee_throughput_per_s: Sequence[float],
    cost_of: Callable[[float], float | None] | None,
    rollouts: int = ROLLOUTS,
) -> dict:
    """The projection for `rollouts` rollouts: each figure as {value, ci_low, ci_high}, and its
    inputs the same way. `episode_ms_by_unit` holds every RL unit's successful trials'
    episode_ms, `knee_throughput_per_s` the bursts' throughputs at the knee tier; `cost_of` gives
    one copy's price for a number of seconds, None (or answering None) where there is no price,
    and the cost is then None."""
    if not episode_ms_by_unit:
        raise ValueError("the projection needs the RL board's episode times of at least one unit")
    if knee < 1:
        raise ValueError(f"the knee is a positive tier of concurrent creates, got {knee}")
    if rollouts < 1:
        raise ValueError(f"the projection is for a positive number of rollouts, got {rollouts}")
    for unit, values in episode_ms_by_unit.items():
        if (estimators.as_values(values, what=f"episode_ms of {unit}") <= 0).any():
            raise ValueError(f"episode_ms of {unit} must be positive")
    throughput = estimators.as_values(knee_throughput_per_s, what="throughput at the knee")
    if (throughput <= 0).any():
        raise ValueError("throughput at the knee must be positive")
    units = list(episode_ms_by_unit.values())
    episode_s = _gmean([estimators.median(v) for v in units]) / 1000
    episode_draws = _gmean_rows([estimators.bootstrap_medians(v) for v in units]) / 1000
    rate = estimators.median(throughput)
    rate_draws = estimators.bootstrap_medians(throughput)

    def hours(e, r):
        return rollouts * e / SECONDS_PER_HOUR, rollouts / np.minimum(
            knee / e, r
        ) / SECONDS_PER_HOUR

    sandbox_h, wall_h = hours(episode_s, rate)
    sandbox_draws, wall_draws = hours(episode_draws, rate_draws)
    figures = {
        "rollouts": rollouts,
        "knee_tier": knee,
        "episode_s": _figure(episode_s, episode_draws),
        "knee_throughput_per_s": _figure(rate, rate_draws),
        "sandbox_hours": _figure(sandbox_h, sandbox_draws),
        "wall_hours": _figure(wall_h, wall_draws),
        "cost_usd": None,
    }
    price = cost_of(episode_s) if cost_of else None
    if cost_of and price is not None:
        draws = np.array([cost_of(float(e)) for e in episode_draws], dtype=float)
        figures["cost_usd"] = _figure(rollouts * price, rollouts * draws)
    return figures


def _gmean(values: Sequence[float]) -> float:
    return float(np.exp(np.mean(np.log(values))))


def _gmean_rows(draws: Sequence[np.ndarray]) -> np.ndarray:
    # Draw i of the combined episode time is the geometric mean of draw i of every unit.
    return np.exp(np.mean(np.log(np.vstack(draws)), axis=0))


def _figure(value: float, draws: np.ndarray) -> dict:
    low, high = estimators.draws_interval(np.asarray(draws, dtype=float))
    return {"value": float(value), "ci_low": low, "ci_high": high}
