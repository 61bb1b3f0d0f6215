"""What the Burst and Density boards show beside their tables, computed at publication
(docs/methodology.md, "Burst" and "Density"): each tier's ready-count curve per provider, the
tier sweep (throughput and 95 % ready time by tier) that shows a provider's knee, and each
provider's documented limits, published by the provider, beside the count density measured."""

from __future__ import annotations

from collections.abc import Iterable

from boxbench.leaderboard.shapes.burst import (
    BurstCharts,
    DeclaredLimits,
    ReadyCurve,
    TierPoint,
    TierSweep,
)
from boxbench.leaderboard.states import provider_info
from boxbench.models import Benchmark, Outcome, Provider, Run, Trial, TrialState
from runner.benchmarks.burst import DEFAULT_TIER
from stats import burst as burst_stats
from stats.estimators import median
from stats.labels import Label

BURST, DENSITY = "burst", "density"
# The boards that show each provider's documented limits beside their results.
LIMITED_BOARDS = (BURST, DENSITY)
# Curves keep at most this many steps per provider and tier: a 100-tier over 20 bursts has
# 2,000 ready times, more than a chart's width shows.
CURVE_POINTS = 400


def default_unit(benchmark_slug: str, unit_slugs: list[str]) -> str | None:
    """The unit that alone is the benchmark's result where its units are not a workload: a
    burst's default tier, when published; None elsewhere."""
    if benchmark_slug == BURST and DEFAULT_TIER in unit_slugs:
        return DEFAULT_TIER
    return None


def scored_unit(benchmark_slug: str, unit_slug: str) -> bool:
    """Whether a unit counts in the scores: every unit but a burst tier other than the default,
    which every eligible provider can run (the others are charted on the board)."""
    return benchmark_slug != BURST or unit_slug == DEFAULT_TIER


def add_charts(board, providers: dict[int, Provider]) -> None:
    """The Burst board's curves and sweep, and the limits beside Burst and Density, added to its
    summary (a boxbench.leaderboard.boards.Board)."""
    if board.benchmark.slug == BURST:
        board.summary["burst"] = burst_charts(board.benchmark, board.runs, providers.values())
    board.summary["limits"] = declared_limits(board.benchmark, board.runs, providers.values())


def burst_charts(benchmark: Benchmark, runs: dict[str, Run], providers: Iterable[Provider]):
    """The burst board's curves and sweep from the successful bursts of the run each provider's
    numbers come from; a tier above the provider's declared concurrent sandboxes was not run
    and says Account Limit."""
    by_slug = {p.slug: p for p in providers}
    bursts: dict[tuple[str, str], list[list[dict]]] = {}
    figures: dict[tuple[str, str], list[dict]] = {}
    tiers = set(benchmark.units.values_list("slug", flat=True))
    for slug, unit, metrics, requests in successes(benchmark, runs):
        if not requests:
            continue
        bursts.setdefault((slug, unit), []).append(requests)
        figures.setdefault((slug, unit), []).append(metrics)
        tiers.add(unit)
    ordered = sorted(tiers, key=int)
    curves: dict[str, list[ReadyCurve]] = {}
    sweep: list[TierSweep] = []
    for slug in sorted(runs, key=lambda s: by_slug[s].name if s in by_slug else s):
        if slug not in by_slug:
            continue
        info = provider_info(by_slug[slug])
        limit = _limits(by_slug[slug]).get("concurrent_sandboxes")
        points: list[TierPoint] = []
        for tier in ordered:
            found = bursts.get((slug, tier), [])
            if found:
                steps = _thin(burst_stats.ready_curve(found))
                curves.setdefault(tier, []).append(
                    {
                        **info,
                        "bursts": len(found),
                        "ms": [ms for ms, _ in steps],
                        "ready": [n for _, n in steps],
                    }
                )
            above = isinstance(limit, int) and int(tier) > limit
            point = burst_stats.tier_point(figures.get((slug, tier), []))
            if found or above:
                label = Label.ACCOUNT_LIMIT.value if above and not found else ""
                points.append({"tier": int(tier), "label": label, **point})  # type: ignore[typeddict-item]
        sweep.append({**info, "points": points})
    charts: BurstCharts = {"default_tier": DEFAULT_TIER, "curves": curves, "sweep": sweep}
    return charts


def _thin(steps: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """At most CURVE_POINTS steps, evenly spaced in the order of time, the last one kept."""
    if len(steps) <= CURVE_POINTS:
        return steps
    stride = len(steps) / CURVE_POINTS
    kept = [steps[int(i * stride)] for i in range(CURVE_POINTS)]
    return [*kept, steps[-1]]


def declared_limits(
    benchmark: Benchmark, runs: dict[str, Run], providers: Iterable[Provider]
) -> list[DeclaredLimits]:
    """Each provider's documented limits on the board, with density's measured count beside
    them (the board's own successful trials) where this is the density board."""
    by_slug = {p.slug: p for p in providers}
    measured: dict[str, list[dict]] = {}
    if benchmark.slug == DENSITY:
        for slug, _, metrics, _ in successes(benchmark, runs):
            measured.setdefault(slug, []).append(metrics)
    rows: list[DeclaredLimits] = []
    for slug in sorted(runs, key=lambda s: by_slug[s].name if s in by_slug else s):
        provider = by_slug.get(slug)
        if provider is None:
            continue
        limits = _limits(provider)
        found = measured.get(slug, [])
        reached = [m["sandboxes_reached"] for m in found if "sandboxes_reached" in m]
        rows.append(
            {
                **provider_info(provider),
                "account_tier": str(limits.get("account_tier", "")),
                "concurrent_sandboxes": limits.get("concurrent_sandboxes"),
                "create_rate_per_s": limits.get("create_rate_per_s"),
                "api_requests_per_s": limits.get("api_requests_per_s"),
                "source": str(limits.get("source", "")),
                "date": str(limits.get("date", "")),
                "measured_sandboxes": median(reached) if reached else None,
                "measured_refused": sum(1 for m in found if m.get("refused")),
                "measured_trials": len(found),
            }
        )
    return rows


def successes(benchmark: Benchmark, runs: dict[str, Run]):
    """(provider slug, unit, metrics, requests) of each successful trial in the runs shown."""
    wanted = {(run.id, slug) for slug, run in runs.items()}
    found = Trial.objects.filter(
        benchmark=benchmark,
        run_id__in={run.id for run in runs.values()},
        state=TrialState.DONE,
        outcome=Outcome.SUCCESS,
    ).values_list("run_id", "provider__slug", "unit__slug", "metrics", "requests")
    for run_id, slug, unit, metrics, requests in found.iterator(chunk_size=500):
        if (run_id, slug) in wanted:
            yield slug, unit, metrics, requests


def _limits(provider: Provider) -> dict:
    limits = (provider.declaration or {}).get("limits")
    return limits if isinstance(limits, dict) else {}
