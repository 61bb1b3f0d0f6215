"""The benchmark registry: each entry exposes DEFINITION, units() and run() (see base.py).

An entry is a module ("runner.benchmarks.create") or, where several benchmarks are built from one
parameterized definition, a named object in a module ("runner.benchmarks.machine_cpu:SINGLE").
Add a benchmark by adding its entry to BENCHMARKS.
"""

from __future__ import annotations

import importlib

from runner.benchmarks.base import Benchmark, BenchmarkDefinition

BENCHMARKS = [
    "runner.benchmarks.create",
    "runner.benchmarks.sequential_tti",
    "runner.benchmarks.burst",
    "runner.benchmarks.density",
    "runner.benchmarks.latency_per_call",
    "runner.benchmarks.file_transfer:UPLOAD",
    "runner.benchmarks.file_transfer:DOWNLOAD",
    "runner.benchmarks.output_stream",
    "runner.benchmarks.destroy",
    "runner.benchmarks.snapshots:SNAPSHOT_RESTORE",
    "runner.benchmarks.snapshots:FORK",
    "runner.benchmarks.deepswe",
    "runner.benchmarks.rl_rollouts",
    "runner.benchmarks.ci_pipelines",
    "runner.benchmarks.terminal_bench",
    "runner.benchmarks.machine_cpu:SINGLE",
    "runner.benchmarks.machine_cpu:ALL",
    "runner.benchmarks.machine_memory_bandwidth",
    "runner.benchmarks.machine_disk_seq",
    "runner.benchmarks.machine_disk_rand:READ",
    "runner.benchmarks.machine_disk_rand:WRITE",
    "runner.benchmarks.machine_hard_links",
    "runner.benchmarks.isolation",
]


def _load(entry: str) -> Benchmark:
    module_name, _, name = entry.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, name) if name else module


def all_benchmarks() -> dict[str, Benchmark]:
    """Every registered benchmark, by slug, in registry order."""
    found = {}
    for entry in BENCHMARKS:
        benchmark = _load(entry)
        slug = benchmark.DEFINITION.slug
        if slug in found:
            raise ValueError(f"{entry}: benchmark slug {slug!r} is already used by another entry")
        found[slug] = benchmark
    return found


def code_definition(slug: str) -> BenchmarkDefinition | None:
    """The definition the code holds for `slug`; None for a benchmark known only from an import."""
    module = all_benchmarks().get(slug)
    return module.DEFINITION if module is not None else None
