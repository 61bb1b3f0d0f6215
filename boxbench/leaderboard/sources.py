"""Which run each provider's numbers come from, and what that run records about them.

For each benchmark and provider, the newest measured published run that holds finished trials of
that provider on it and publishes that pair; every page names the run (and image digest) behind
each provider's numbers.
"""

from __future__ import annotations

from boxbench.leaderboard import shapes, stored
from boxbench.models import Benchmark, Provider, Run
from runner.manifest import Manifest
from runner.rules import Refusal
from stats import labels


def leaderboard_sources(published: list[Run], held: dict) -> dict[int, dict[int, Run]]:
    """{benchmark id: {provider id: run}}: each provider's numbers on a benchmark come from the
    newest measured of the `published` runs holding finished trials of that provider on that
    benchmark and not holding the pair back (`held`, as boxbench.holdbacks.held_back gives it),
    whatever the order in which runs were published. A re-run of one pair replaces that pair
    only."""
    held_pairs = {
        run_id: {(pair["provider"], pair["benchmark"]) for pair in pairs}
        for run_id, pairs in held.items()
    }
    by_id = {run.id: run for run in published}
    slugs = dict(Benchmark.objects.values_list("id", "slug"))
    provider_slugs = dict(Provider.objects.values_list("id", "slug"))
    # Attempts a run knows only as counts (imported from a public file) have no times: the pair
    # was measured when its run was.
    cells = [
        {
            "run_id": run_id,
            "provider_id": provider_id,
            "benchmark_id": benchmark_id,
            "benchmark__slug": slugs[benchmark_id],
            "provider__slug": provider_slugs[provider_id],
            "measured": measured,
        }
        for run_id, provider_id, benchmark_id, measured, _ in stored.published_pairs(published)
    ]
    candidates: dict[int, list] = {}  # benchmark id -> [(measured, provider id, slug, run)]
    for cell in cells:
        run = by_id[cell["run_id"]]
        if (cell["provider__slug"], cell["benchmark__slug"]) in held_pairs.get(run.id, ()):
            continue
        measured = (_measured_at(cell["measured"], run), str(run.id))
        candidates.setdefault(cell["benchmark_id"], []).append(
            (measured, cell["provider_id"], cell["provider__slug"], run)
        )
    chosen: dict[int, dict[int, Run]] = {}
    for benchmark_id, found in candidates.items():
        found.sort(key=lambda c: c[0], reverse=True)
        # One series per board: the job hosts' (type, region) that most providers' newest runs
        # share (a tie goes to the newest measured). A provider's numbers come from its newest
        # run in that series; runs timed from job hosts of another type or region are never
        # combined with it (other_series lists them).
        newest: dict[int, tuple] = {}
        for measured, provider_id, slug, run in found:
            newest.setdefault(provider_id, (measured, job_host_series(run, slug)))
        votes: dict[tuple, list] = {}
        for measured, key in newest.values():
            votes.setdefault(key, []).append(measured)
        series = max(votes, key=lambda key: (len(votes[key]), max(votes[key])))
        for _, provider_id, slug, run in found:
            if job_host_series(run, slug) == series:
                chosen.setdefault(benchmark_id, {}).setdefault(provider_id, run)
    return chosen


def job_host_series(run: Run, provider: str) -> tuple[str, str]:
    """(machine type, region) of the job host that timed `provider` in `run`; ("", "") where the
    run did not record them."""
    entry = run.typed_manifest.providers.get(provider)
    return (entry.job_host_type, entry.job_host_region) if entry else ("", "")


def other_series(
    benchmark_id: int, chosen: dict[int, Run], published: list[Run], providers: dict
) -> list[dict]:
    """The published runs of this benchmark left off its board because their job hosts are of
    another type or region: [{"provider", "run", "job_host_type", "job_host_region"}]."""
    if not chosen:
        return []
    shown = {run.id for run in chosen.values()}
    first = next(iter(chosen.items()))
    series = job_host_series(first[1], providers[first[0]].slug)
    out = []
    by_id = {run.id: run for run in published}
    for run_id, provider_id in stored.finished_pairs(benchmark_id, published, shown):
        slug = providers[provider_id].slug
        kind, region = job_host_series(by_id[run_id], slug)
        if (kind, region) != series:
            entry = {
                "provider": slug,
                "run": str(run_id),
                "job_host_type": kind,
                "job_host_region": region,
            }
            if entry not in out:
                out.append(entry)
    return sorted(out, key=lambda e: (e["provider"], e["run"]))


def _measured_at(last_trial_end, run: Run):
    """When a pair was measured: its last trial's end, else the run's end, start or creation."""
    return last_trial_end or run.ended_at or run.started_at or run.created_at


def image_digest(manifest: dict, benchmark: str, providers: list[str] | None = None) -> str:
    """The image digest a benchmark ran on, as a stored manifest records it."""
    return Manifest.from_json(manifest).digest_for(benchmark, providers)


def planned_units(benchmark: Benchmark, run: Run) -> list[str] | None:
    """The units of `benchmark` the run's plan named (manifest `benchmarks.<slug>.units`), or
    None when the run records no plan for it."""
    planned = run.typed_manifest.benchmarks.get(benchmark.slug)
    if planned and planned.units:
        return list(dict.fromkeys(planned.units))
    return None


def run_floor(benchmark: Benchmark, run: Run, declared_units: int) -> int:
    """The successes a provider needs on this benchmark in this run before it is ranked.

    The declared floor; a run planned over a subset of a multi-unit workload's units needs the
    same share of it per unit (stats.labels.subset_floor). The trials per unit the run asked for
    never lower it: a run of 3 trials is Not Ranked, never ranked on 3. A workload whose units
    vary by machine (imported tasks) recorded the floor of the run's own units when it was
    planned (`run_floor`): that one counts.
    """
    recorded = run.typed_manifest.benchmarks.get(benchmark.slug)
    if recorded and recorded.run_floor:
        return recorded.run_floor
    units = planned_units(benchmark, run)
    planned = len(units) if units is not None else declared_units
    return labels.subset_floor(benchmark.ranking_floor, declared_units, planned)


def unit_scope(units: int, declared_units: int) -> shapes.UnitScope:
    """How much of the workload a page's numbers cover: {"units", "of", "subset", "text"}; the
    text ("2 of 10 units") goes wherever a subset's numbers appear."""
    subset = 0 < units < declared_units
    noun = "unit" if declared_units == 1 else "units"
    if subset:
        text = f"{units} of {declared_units} {noun}"
    else:
        text = f"all {declared_units} {noun}" if declared_units > 1 else f"{declared_units} {noun}"
    return {"units": units, "of": declared_units, "subset": subset, "text": text}


def planned_refusals(benchmark: Benchmark, published: list[Run]) -> dict[str, Refusal]:
    """The planners' refusals of this benchmark by provider slug, the latest run's first."""
    found: dict[str, Refusal] = {}
    for run in published:
        for refusal in run.typed_manifest.refusals:
            if refusal.benchmark == benchmark.slug:
                found.setdefault(refusal.provider, refusal)
    return found


def run_source(run: Run, benchmark: Benchmark, providers: list[str] | None = None) -> shapes.Source:
    return {
        "run": str(run.id),
        "run_name": run.name,
        "image_digest": run.typed_manifest.digest_for(benchmark.slug, providers),
    }


def run_sources(
    runs: dict[str, Run], benchmark: Benchmark, names: dict[str, str]
) -> list[shapes.RunSource]:
    """Each distinct run behind a page, the latest first, with the providers it feeds."""
    by_run: dict = {}
    for slug, run in runs.items():
        by_run.setdefault(run.id, (run, []))[1].append(slug)
    ordered = sorted(by_run.values(), key=lambda item: (item[0].published_at, str(item[0].id)))
    return [
        {**run_source(run, benchmark, slugs), "providers": sorted(names[slug] for slug in slugs)}
        for run, slugs in reversed(ordered)
    ]
