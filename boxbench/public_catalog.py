"""The providers and benchmarks a visitor may know of: those a published run holds (its trials,
its counted attempts, its refusals) or the code declares. Rows a run brings in (an imported
file's, or a run's not yet published) stay unseen until that run is published: their names and
texts are that run's, which only its reviewers see."""

import functools

from boxbench.models import Run, TrialTally, UnsuccessfulCount
from runner.declarations import BENCH_ONLY, DECLARATIONS_DIR


@functools.cache
def declared_providers() -> frozenset[str]:
    """The providers the code declares, one runner/provider_declarations/<slug>.yaml each, but
    for those that only measure the runner itself."""
    return frozenset(
        path.stem for path in DECLARATIONS_DIR.glob("*.yaml") if path.stem not in BENCH_ONLY
    )


@functools.cache
def declared_benchmarks() -> frozenset[str]:
    """The benchmarks the code defines (runner/benchmarks/)."""
    from runner.benchmarks import all_benchmarks

    return frozenset(all_benchmarks())


def public_providers(published: list[Run]) -> set[str]:
    """The slugs of the providers the code declares or one of the `published` runs holds."""
    ids = [run.id for run in published]
    slugs = set(declared_providers())
    for model in (TrialTally, UnsuccessfulCount):
        rows = model.objects.filter(run__in=ids).values_list("provider__slug", flat=True)
        slugs.update(rows.distinct())
    for run in published:
        manifest = run.manifest if isinstance(run.manifest, dict) else {}
        slugs.update(manifest.get("providers") or {})
        for refusal in manifest.get("refusals") or []:
            if isinstance(refusal, dict) and isinstance(refusal.get("provider"), str):
                slugs.add(refusal["provider"])
    return slugs
