"""The counts lines of a raw-data file (docs/raw-data.md): per benchmark, unit and provider, the
unsuccessful attempts counted by outcome, and the provider failures no top-up replaced; and its
reliability lines: per provider, the attempts and failures of each operation.

The public form counts every unsuccessful trial here instead of writing its line; both forms
write the counts the database holds for attempts it knows only as counts (a run imported from a
public file). Both forms write the reliability lines, since a run imported from either may know
its failures only as counts.
"""

from django.db.models import Count, Exists, OuterRef

from boxbench.leaderboard.reliability import run_counts
from boxbench.models import (
    Benchmark,
    Outcome,
    Provider,
    Run,
    RunReliability,
    Trial,
    TrialState,
    Unit,
    UnsuccessfulCount,
)
from boxbench.rawdata.errors import RawDataError
from boxbench.rawdata.schema import PUBLIC


def counts_lines(run: Run, form: str, seen) -> list[dict]:
    """The counts lines, by benchmark, unit and provider: the counts the database holds and, in
    the public form, the run's unsuccessful trials counted by outcome, with the provider failures
    no top-up replaced, cut-short trials included (what the labels count;
    boxbench.leaderboard.cells).
    The benchmarks, units and providers they name are added to `seen` (exporter.Seen), which
    the header declares."""
    cells: dict[tuple[int, int, int], dict] = {}

    def add(key, outcome: str, n: int):
        cell = cells.setdefault(key, {"outcomes": {}, "unreplaced": 0})
        cell["outcomes"][outcome] = cell["outcomes"].get(outcome, 0) + n

    cell_fields = ("benchmark_id", "unit_id", "provider_id")
    stored = UnsuccessfulCount.objects.filter(run=run).values_list(
        *cell_fields, "outcomes", "unreplaced_provider_failures"
    )
    for benchmark, unit, provider, outcomes, unreplaced in stored:
        for outcome, n in outcomes.items():
            add((benchmark, unit, provider), outcome, n)
        cells[(benchmark, unit, provider)]["unreplaced"] += unreplaced
    if form == PUBLIC:
        done = Trial.objects.filter(run=run, state=TrialState.DONE).exclude(outcome=Outcome.SUCCESS)
        by_outcome = done.values(*cell_fields, "outcome").order_by().annotate(n=Count("id"))
        for row in by_outcome:
            add((row["benchmark_id"], row["unit_id"], row["provider_id"]), row["outcome"], row["n"])
        replaced = Trial.objects.filter(replaces=OuterRef("pk"), state=TrialState.DONE)
        unreplaced = (
            done.filter(outcome=Outcome.PROVIDER_FAILURE)
            .exclude(Exists(replaced))
            .values(*cell_fields)
            .order_by()
            .annotate(n=Count("id"))
        )
        for row in unreplaced:
            cells[(row["benchmark_id"], row["unit_id"], row["provider_id"])]["unreplaced"] += row[
                "n"
            ]
    if not cells:
        return []
    benchmarks = {b.id: b for b in Benchmark.objects.filter(id__in={k[0] for k in cells})}
    units = dict(Unit.objects.filter(id__in={k[1] for k in cells}).values_list("id", "slug"))
    providers = dict(
        Provider.objects.filter(id__in={k[2] for k in cells}).values_list("id", "slug")
    )
    lines = []
    for (benchmark, unit, provider), cell in cells.items():
        seen.benchmarks.add(benchmark)
        seen.units.add(unit)
        seen.providers.add(provider)
        lines.append(
            {
                "type": "counts",
                "benchmark": benchmarks[benchmark].slug,
                "benchmark_version": benchmarks[benchmark].version,
                "unit": units[unit],
                "provider": providers[provider],
                "outcomes": cell["outcomes"],
                "unreplaced_provider_failures": cell["unreplaced"],
            }
        )
    return sorted(
        lines, key=lambda c: (c["benchmark"], c["benchmark_version"], c["unit"], c["provider"])
    )


def reliability_lines(run: Run, seen) -> list[dict]:
    """One reliability line per provider, in slug order: the counts the run's first publication
    stored, or (not published yet) those it would store. The providers are added to `seen`."""
    stored = RunReliability.objects.filter(run=run).values_list("counts", flat=True).first()
    counts = run_counts(run) if stored is None else stored
    ids = dict(Provider.objects.filter(slug__in=counts).values_list("slug", "id"))
    lines = []
    for slug, entry in sorted(counts.items()):
        if slug not in ids:
            raise RawDataError(
                f"run {run.id}: its reliability counts name provider {slug!r}, which is not in "
                "the database"
            )
        seen.providers.add(ids[slug])
        lines.append(
            {
                "type": "reliability",
                "provider": slug,
                "operations": entry["operations"],
                "unplaced": entry["unplaced"],
            }
        )
    return lines
