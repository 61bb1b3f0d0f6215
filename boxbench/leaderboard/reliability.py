"""Failure rates per provider and operation over every attempt of the published runs
(docs/methodology.md, "Reliability"): each run's attempts are counted once, when it is first
published (RunReliability), and every publication adds up the stored counts. Only counts leave
the trials: their causes stay private evidence."""

from __future__ import annotations

from collections import Counter

from django.db.models import Count

from boxbench.leaderboard.shapes.reliability import (
    ProviderFailures,
    ProviderReliability,
    ReliabilityPage,
    RunFailures,
)
from boxbench.leaderboard.states import provider_info
from boxbench.models import (
    Benchmark,
    Outcome,
    Provider,
    Run,
    RunReliability,
    Trial,
    TrialState,
    UnsuccessfulCount,
)
from stats import reliability as rel

# The outcomes a public file's counts lines carry that are failures (excluded and missed are no
# attempt at an operation).
FAILED_OUTCOMES = (Outcome.PROVIDER_FAILURE, Outcome.BENCHMARK_ERROR)


def store_counts(published: list[Run]) -> None:
    """Count the attempts of every published run not counted yet (at a publication, the new
    run's): a run's trials do not change once it is published."""
    known = set(
        RunReliability.objects.filter(run_id__in=[r.id for r in published]).values_list(
            "run_id", flat=True
        )
    )
    rows = [
        RunReliability(run=run, counts=run_counts(run)) for run in published if run.id not in known
    ]
    # A concurrent publication may count the same run: its counts are the same.
    RunReliability.objects.bulk_create(rows, ignore_conflicts=True)


def run_counts(run: Run) -> dict:
    """{provider slug: {"operations": tally, "unplaced": n}} of one run's finished trials."""
    # Trials that went alike are placed once and counted together: most succeed, and every
    # success of one provider on one benchmark is alike. The database groups them by ids (on
    # 100,000 trials, 0.24 s where reading each took 1.7 s and grouping by joined names 0.7 s).
    alike: Counter[tuple] = Counter()
    tallies: dict[str, list[dict]] = {}
    trials = (
        Trial.objects.filter(run=run, state=TrialState.DONE)
        .exclude(benchmark__slug__in=rel.NOT_COUNTED_BENCHMARKS)
        .order_by()
    )
    fields = ("provider_id", "benchmark_id", "outcome", "owner", "cause")
    grouped = list(trials.filter(requests=[]).values_list(*fields).annotate(n=Count("id")))
    slugs = dict(Provider.objects.filter(id__in={g[0] for g in grouped}).values_list("id", "slug"))
    capabilities_of = dict(
        Benchmark.objects.filter(id__in={g[1] for g in grouped}).values_list(
            "id", "required_capabilities"
        )
    )
    for provider, benchmark, outcome, owner, cause, n in grouped:
        key = (slugs[provider], tuple(capabilities_of[benchmark]), outcome, owner, cause)
        alike[key] += n
    bursts = trials.exclude(requests=[]).values_list("provider__slug", "requests")
    for slug, requests in bursts.iterator(chunk_size=2000):
        # A burst: each request is an attempt of its own.
        found = [a for request in requests for a in rel.request_attempts(request)]
        tallies.setdefault(slug, []).append(rel.tally(found))
    for (slug, capabilities, outcome, owner, cause), n in alike.items():
        found = rel.trial_attempts(rel.operations_of(capabilities), outcome, owner, cause)
        tallies.setdefault(slug, []).append(rel.tally(found, n))
    counts = {
        slug: {"operations": rel.merge(found), "unplaced": 0} for slug, found in tallies.items()
    }
    for slug, outcomes in UnsuccessfulCount.objects.filter(run=run).values_list(
        "provider__slug", "outcomes"
    ):
        entry = counts.setdefault(slug, {"operations": {}, "unplaced": 0})
        entry["unplaced"] += sum(outcomes.get(o, 0) for o in FAILED_OUTCOMES)
    return counts


def reliability_page(published: list[Run], providers: dict[int, Provider]) -> ReliabilityPage:
    """Every provider's rates over the published runs (newest first), with each run's own."""
    stored = dict(
        RunReliability.objects.filter(run_id__in=[r.id for r in published]).values_list(
            "run_id", "counts"
        )
    )
    by_slug = {p.slug: p for p in providers.values()}
    tallies: dict[str, list[dict]] = {}
    unplaced: dict[str, int] = {}
    history: dict[str, list[RunFailures]] = {}
    for run in published:
        for slug, counts in stored.get(run.id, {}).items():
            tallies.setdefault(slug, []).append(counts["operations"])
            unplaced[slug] = unplaced.get(slug, 0) + counts["unplaced"]
            point: RunFailures = {
                "run": str(run.id),
                "run_name": run.name,
                "published_at": run.published_at.isoformat() if run.published_at else "",
                **figures(counts["operations"]),
            }
            history.setdefault(slug, []).append(point)
    rows: list[ProviderReliability] = []
    for slug in sorted(tallies, key=lambda s: by_slug[s].name if s in by_slug else s):
        if slug not in by_slug:
            continue  # a provider no longer in the catalogue has no page to link
        rows.append(
            {
                **provider_info(by_slug[slug]),
                **figures(rel.merge(tallies[slug])),
                "unplaced": unplaced[slug],
                "history": history[slug],
            }
        )
    return {
        "floor": rel.MIN_ATTEMPTS,
        "operations": list(rel.OPERATIONS),
        "owners": list(rel.OWNERS),
        "cause_classes": list(rel.CAUSE_CLASSES),
        "runs": len(stored),
        "providers": rows,
    }


def figures(tallied: dict[str, dict]) -> ProviderFailures:
    """The overall rate and each attempted operation's, in the operations' order."""
    operations = {op: rel.rate(tallied[op]) for op in rel.OPERATIONS if op in tallied}
    # stats returns plain dicts (it knows no page shapes); materialize checks the shape.
    return {"overall": rel.overall(tallied), "operations": operations}  # type: ignore[typeddict-item]


def provider_rates(page: ReliabilityPage) -> dict[str, ProviderFailures]:
    """{provider slug: its overall and per-operation rates}: what the overview and the provider
    pages show beside speed and cost."""
    return {
        row["provider"]: {"overall": row["overall"], "operations": row["operations"]}
        for row in page["providers"]
    }
