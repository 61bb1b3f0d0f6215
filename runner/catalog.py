"""Bring benchmark definitions (runner/benchmarks) and provider declarations into the database.

Stored definitions never change (boxbench/definitions.py, reached through runner/store.py): a
definition missing from the database is created, an identical one is reused, and one that differs
from the stored row under the same slug (and version) is refused with a message naming what
differs. A changed benchmark definition must bump its version, which makes a new Benchmark row, so
old results keep the definition that made them; a changed provider declaration needs a new slug.
"""

from __future__ import annotations

from collections.abc import Iterable

from runner import store
from runner.benchmarks import all_benchmarks
from runner.declarations import Declaration, load_all

BENCHMARK_ORIGIN = "the code (runner/benchmarks)"


def provider_definition(slug: str, declaration: Declaration) -> store.CodeDefinition:
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
    return store.CodeDefinition(values, f"runner/provider_declarations/{slug}.yaml")


def benchmark_definition(slug: str, module) -> store.CodeDefinition:
    d = module.DEFINITION
    values = {
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
    }
    units = tuple(
        {"slug": u.slug, "title": u.title, "definition": u.definition, "digest": u.digest}
        for u in module.units()
    )
    return store.CodeDefinition(values, BENCHMARK_ORIGIN, units)


def sync_catalog(providers: Iterable[str] | None = None, benchmarks: Iterable[str] | None = None):
    """The named (default: all) providers and benchmarks as stored rows, by slug.

    Only the ones a run uses are brought in, so a conflicting definition elsewhere (say, an
    imported benchmark version the code now defines differently) blocks only the runs that use it.
    Raises store.DefinitionConflict when one differs from its stored row.
    """
    wanted_providers = None if providers is None else set(providers)
    wanted_benchmarks = None if benchmarks is None else set(benchmarks)
    return store.store_definitions(
        [
            provider_definition(slug, declaration)
            for slug, declaration in load_all().items()
            if wanted_providers is None or slug in wanted_providers
        ],
        [
            benchmark_definition(slug, module)
            for slug, module in all_benchmarks().items()
            if wanted_benchmarks is None or slug in wanted_benchmarks
        ],
    )
