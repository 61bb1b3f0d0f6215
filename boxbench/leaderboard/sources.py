"""Which run each provider's numbers come from, and what that run records about them.

For each benchmark and provider, the latest published run that holds finished trials of that
provider on it; every page names the run (and image digest) behind each provider's numbers.
"""

from __future__ import annotations

from boxbench.models import Benchmark, Run, Trial, TrialState
from runner.manifest import Manifest
from runner.rules import Refusal
from stats import labels


def leaderboard_sources() -> dict[int, dict[int, Run]]:
    """{benchmark id: {provider id: run}}: each provider's numbers on a benchmark come from the
    latest published run holding finished trials of that provider on that benchmark, so a
    re-run of one pair replaces that pair only."""
    published = {run.id: run for run in Run.objects.published()}
    cells = (
        Trial.objects.filter(run_id__in=published, state=TrialState.DONE)
        .values_list("benchmark_id", "provider_id", "run_id")
        .order_by()  # the model's ordering would join DISTINCT and make every row distinct
        .distinct()
    )
    chosen: dict[int, dict[int, Run]] = {}
    for benchmark_id, provider_id, run_id in cells:
        run = published[run_id]
        current = chosen.setdefault(benchmark_id, {}).get(provider_id)
        if current is None or _newer(run, current):
            chosen[benchmark_id][provider_id] = run
    return chosen


def _newer(run: Run, other: Run) -> bool:
    return (run.published_at, str(run.id)) > (other.published_at, str(other.id))


def image_digest(manifest: dict, benchmark: str, providers: list[str] | None = None) -> str:
    """The image digest a benchmark ran on, as a stored manifest records it."""
    return Manifest.from_json(manifest).digest_for(benchmark, providers)


def ranking_floor(benchmark: Benchmark, run: Run, units: int) -> int:
    """The successes a provider needs on this benchmark in this run before it is ranked.

    The declared floor, lowered to what the run asked for: a run planned with fewer trials per
    unit (or fewer units) than the catalog needs 90 % of its requested successes across all units
    on a multi-unit workload, and its requested N on a single-unit benchmark.
    """
    planned = run.typed_manifest.benchmarks.get(benchmark.slug)
    requested = planned.trials_per_unit if planned else benchmark.trials_per_unit
    if units > 1:
        planned_units = (len(planned.units) if planned else 0) or units
        return min(benchmark.ranking_floor, labels.ranking_floor(requested * planned_units))
    return min(benchmark.ranking_floor, requested)


def planned_refusals(benchmark: Benchmark, published: list[Run]) -> dict[str, Refusal]:
    """The planners' refusals of this benchmark by provider slug, the latest run's first."""
    found: dict[str, Refusal] = {}
    for run in published:
        for refusal in run.typed_manifest.refusals:
            if refusal.benchmark == benchmark.slug:
                found.setdefault(refusal.provider, refusal)
    return found


def run_source(run: Run, benchmark: Benchmark, providers: list[str] | None = None) -> dict:
    return {
        "run": str(run.id),
        "run_name": run.name,
        "image_digest": run.typed_manifest.digest_for(benchmark.slug, providers),
    }


def run_sources(runs: dict[str, Run], benchmark: Benchmark, names: dict[str, str]) -> list[dict]:
    """Each distinct run behind a page, the latest first, with the providers it feeds."""
    by_run: dict = {}
    for slug, run in runs.items():
        by_run.setdefault(run.id, (run, []))[1].append(slug)
    ordered = sorted(by_run.values(), key=lambda item: (item[0].published_at, str(item[0].id)))
    return [
        {**run_source(run, benchmark, slugs), "providers": sorted(names[slug] for slug in slugs)}
        for run, slugs in reversed(ordered)
    ]
