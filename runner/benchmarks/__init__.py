"""The benchmark registry: one module per benchmark, each exposing DEFINITION, units() and run().

Add a benchmark by adding its module path to BENCHMARK_MODULES (see runner/benchmarks/base.py).
"""

from __future__ import annotations

import importlib
from types import ModuleType

BENCHMARK_MODULES = [
    "runner.benchmarks.create",
    "runner.benchmarks.sequential_tti",
    "runner.benchmarks.latency_per_call",
    "runner.benchmarks.file_upload",
    "runner.benchmarks.file_download",
    "runner.benchmarks.destroy",
    "runner.benchmarks.deepswe",
    "runner.benchmarks.machine_cpu_single",
    "runner.benchmarks.machine_cpu_all",
    "runner.benchmarks.machine_memory_bandwidth",
    "runner.benchmarks.machine_disk_seq",
    "runner.benchmarks.machine_disk_rand_read_4k",
    "runner.benchmarks.machine_disk_rand_write_4k",
    "runner.benchmarks.machine_hard_links",
]


class UnknownBenchmark(LookupError):
    pass


def all_benchmarks() -> dict[str, ModuleType]:
    """Every registered benchmark module, by slug, in registry order."""
    modules = {}
    for path in BENCHMARK_MODULES:
        module = importlib.import_module(path)
        slug = module.DEFINITION.slug
        if slug in modules:
            raise ValueError(f"{path}: benchmark slug {slug!r} is already used by another module")
        modules[slug] = module
    return modules


def load_benchmark(slug: str) -> ModuleType:
    modules = all_benchmarks()
    try:
        return modules[slug]
    except KeyError:
        known = ", ".join(modules)
        raise UnknownBenchmark(f"unknown benchmark {slug!r} (known: {known})") from None
