"""Sync benchmark definitions (runner/benchmarks) and provider declarations into the database.

Idempotent: running it twice changes nothing the second time. A changed benchmark definition must
bump its version, which makes a new Benchmark row, so old results keep the definition that made
them.
"""

from __future__ import annotations

from django.db import transaction

from boxbench.models import Benchmark, Provider, Unit
from runner.benchmarks import all_benchmarks
from runner.declarations import load_all


def sync_providers() -> dict[str, Provider]:
    providers = {}
    for slug, declaration in load_all().items():
        providers[slug], _ = Provider.objects.update_or_create(
            slug=slug,
            defaults={
                "name": declaration.name,
                "adapter": declaration.adapter,
                "region": declaration.region,
                "region_marker": declaration.region_marker,
                "region_note": declaration.region_note,
                "declaration": declaration.data,
                "declaration_digest": declaration.digest,
                "pricing": declaration.pricing,
                "pricing_digest": declaration.pricing_digest,
            },
        )
    return providers


def sync_benchmarks() -> dict[str, Benchmark]:
    benchmarks = {}
    for slug, module in all_benchmarks().items():
        d = module.DEFINITION
        benchmark, _ = Benchmark.objects.update_or_create(
            slug=slug,
            version=d.version,
            defaults={
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
        )
        for unit in module.units():
            Unit.objects.update_or_create(
                benchmark=benchmark,
                slug=unit.slug,
                defaults={
                    "title": unit.title,
                    "definition": unit.definition,
                    "digest": unit.digest,
                },
            )
        benchmarks[slug] = benchmark
    return benchmarks


def sync_catalog() -> tuple[dict[str, Provider], dict[str, Benchmark]]:
    with transaction.atomic():
        return sync_providers(), sync_benchmarks()
