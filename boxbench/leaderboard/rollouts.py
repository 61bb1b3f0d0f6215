"""What a million rollouts would take, on the RL rollouts board, computed at publication
(docs/methodology.md, "What a million rollouts would take"): each provider's episode times from
this board, its knee of concurrency and throughput there from the Burst board, its price from its
declaration, put through stats.rollouts. An input that is missing is named and nothing is shown
in its place."""

from __future__ import annotations

from typing import cast

from django.urls import reverse

from boxbench.leaderboard.burst import BURST, successes
from boxbench.leaderboard.shapes.rollouts import (
    RolloutFigures,
    RolloutInputs,
    RolloutProjection,
    RolloutRow,
)
from boxbench.leaderboard.states import provider_cost, provider_info
from boxbench.models import Provider
from runner.benchmarks import rl_rollouts
from runner.pricing import trial_cost_usd
from stats import rollouts as rollout_stats

FORMULA = (
    "sandbox-hours = N × e / 3600; wall hours = N / min(K / e, r) / 3600; "
    "cost = N × price of one copy held e seconds. N = 1,000,000 rollouts; e = an episode "
    "(restore to destroy, the geometric mean over the units of their median episode_ms, "
    "measured 2 at a time); K = the knee, the burst tier of highest median throughput; r = that "
    "median throughput (ready sandboxes per second). 95 % intervals: the formula applied to each "
    "bootstrap draw of e and r."
)


def add_projection(boards, providers: dict[int, Provider]) -> None:
    """The projection added to the RL board's summary, once every board is built (the Burst
    board may come after it)."""
    rl = next((b for b in boards if b.benchmark.slug == rl_rollouts.SLUG), None)
    if rl is None:
        return
    burst = next((b for b in boards if b.benchmark.slug == BURST), None)
    rl.summary["rollouts"] = projection(rl, burst, providers)


def projection(rl, burst, providers: dict[int, Provider]) -> RolloutProjection:
    by_slug = {p.slug: p for p in providers.values()}
    units = list(rl.benchmark.units.order_by("slug"))
    throughputs = _burst_throughputs(burst) if burst else {}
    rows = [
        _row(rl, by_slug[slug], units, throughputs.get(slug), burst is not None)
        for slug in sorted(rl.runs, key=lambda s: by_slug[s].name if s in by_slug else s)
        if slug in by_slug
    ]
    return {
        "rollouts": rollout_stats.ROLLOUTS,
        "formula": FORMULA,
        "burst_url": reverse("benchmark", args=[BURST]) if burst else "",
        "rows": rows,
    }


def _row(rl, provider: Provider, units, throughput, burst_board: bool) -> RolloutRow:
    missing = []
    episodes = {}
    for unit in units:
        cell = rl.cells.get((unit.id, provider.id))
        if cell is None or cell.samples.values.size == 0:
            missing.append(f"no successful RL rollout trials on {unit.slug}")
        else:
            episodes[unit.slug] = cell.samples.values
    knee = rollout_stats.knee_tier(throughput or {})
    if not burst_board:
        missing.append("no Burst board is published")
    elif knee is None:
        missing.append("no successful burst on the Burst board")
    cost_of = None
    if not provider_cost(provider):
        missing.append("no provider price in its declaration (cost only)")
    else:
        pricing, cpus, mib = provider.pricing, rl.benchmark.cpus, rl.benchmark.memory_mib
        cost_of = lambda seconds: trial_cost_usd(pricing, cpus, mib, seconds)  # noqa: E731
    inputs: RolloutInputs = {
        "rl_url": reverse("benchmark", args=[rl_rollouts.SLUG]),
        "knee_url": reverse("unit", args=[BURST, str(knee)]) if knee else "",
        "pricing_url": reverse("provider", args=[provider.slug]),
    }
    row: RolloutRow = {
        **provider_info(provider),
        "missing": missing,
        "inputs": inputs,
        "figures": None,
    }
    if knee is not None and len(episodes) == len(units) and throughput is not None:
        try:
            found = rollout_stats.project(episodes, knee, throughput[knee], cost_of)
            row["figures"] = cast(RolloutFigures, found)
        except ValueError as refused:  # a stored value no projection can take, named
            missing.append(f"not projected: {refused}")
    return row


def _burst_throughputs(burst) -> dict[str, dict[int, list[float]]]:
    """Each provider's burst throughputs by tier, from the successful bursts of the run its
    Burst board numbers come from."""
    found: dict[str, dict[int, list[float]]] = {}
    for slug, unit, metrics, _ in successes(burst.benchmark, burst.runs):
        if "throughput_per_s" in metrics:
            found.setdefault(slug, {}).setdefault(int(unit), []).append(metrics["throughput_per_s"])
    return found
