"""Bring benchmark definitions (runner/benchmarks) and provider declarations into the database.

Stored definitions never change (boxbench/definitions.py): a definition missing from the database
is created, an identical one is reused, and one that differs from the stored row under the same
slug (and version) is refused with a message naming what differs. A changed benchmark definition
must bump its version, which makes a new Benchmark row, so old results keep the definition that
made them; a changed provider declaration needs a new slug.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from boxbench.definitions import ensure_benchmark, ensure_provider, ensure_unit
from boxbench.models import Benchmark, Provider
from runner.benchmarks import all_benchmarks
from runner.declarations import load_all


def sync_providers(only: Iterable[str] | None = None) -> dict[str, Provider]:
    providers = {}
    for slug, declaration in load_all().items():
        if only is not None and slug not in only:
            continue
        values = {
            "slug": slug,
            "name": declaration.name,
            "adapter": declaration.adapter,
            "region": declaration.region,
            "region_marker": declaration.region_marker,
            "region_note": declaration.region_note,
            "declaration": declaration.data,
            "declaration_digest": declaration.digest,
            "pricing": declaration.pricing,
            "pricing_digest": declaration.pricing_digest,
        }
        providers[slug] = ensure_provider(values, f"runner/declarations/{slug}.yaml")
    return providers


def sync_benchmarks(only: Iterable[str] | None = None) -> dict[str, Benchmark]:
    benchmarks = {}
    for slug, module in all_benchmarks().items():
        if only is not None and slug not in only:
            continue
        d = module.DEFINITION
        origin = "the code (runner/benchmarks)"
        benchmark = ensure_benchmark(
            {
                "slug": slug,
                "version": d.version,
                "title": d.title,
                "description": d.description,
                "section": d.section,
                "metric": d.metric,
                "unit": d.unit,
                "direction": d.direction,
                "statistic": d.statistic,
                "clock": d.clock,
                "cpus": d.cpus,
                "memory_mib": d.memory_mib,
                "trials_per_unit": d.trials_per_unit,
                "ranking_floor": d.ranking_floor,
                "required_capabilities": list(d.required_capabilities),
                "stage_names": list(d.stage_names),
                "charted": d.charted,
                "steps_include_create_or_build": d.steps_include_create_or_build,
            },
            origin,
        )
        for unit in module.units():
            values = {
                "slug": unit.slug,
                "title": unit.title,
                "definition": unit.definition,
                "digest": unit.digest,
            }
            ensure_unit(benchmark, values, origin)
        benchmarks[slug] = benchmark
    return benchmarks


def sync_catalog(
    providers: Iterable[str] | None = None, benchmarks: Iterable[str] | None = None
) -> tuple[dict[str, Provider], dict[str, Benchmark]]:
    """The named (default: all) providers and benchmarks as stored rows.

    Only the ones a run uses are brought in, so a conflicting definition elsewhere (say, an
    imported benchmark version the code now defines differently) blocks only the runs that use it.
    Raises DefinitionConflict when one differs from its stored row.
    """
    with transaction.atomic():
        return sync_providers(providers), sync_benchmarks(benchmarks)
