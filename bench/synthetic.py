"""Synthetic runs in the raw-data format, for tests, demos and the performance scripts.

`synthetic_run(trials=...)` yields JSON Lines (header first) that `bench import` accepts. Values are
log-normal around a per-provider speed so leaderboards have a clear order, with a few provider
failures that later trials replace.
"""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from runner.outcomes import Clock, Direction, Outcome, Owner

STAGES = ["Read", "Write", "Install", "Build", "Test"]

PROVIDERS = [
    # slug, name, speed factor, price per vCPU-second, region marker
    ("alpha", "Alpha Cloud", 1.00, 0.000014, ""),
    ("bravo", "Bravo Sandboxes", 1.35, 0.000011, ""),
    ("charlie", "Charlie Boxes", 1.80, 0.000009, "EU"),
]

BENCHMARKS = [
    # slug, title, section, metric, unit, direction, clock, stages, units, base value
    (
        "create",
        "Create",
        "sandbox_operations",
        "create_ms",
        "ms",
        "lower",
        "job_host",
        [],
        1,
        400.0,
    ),
    (
        "cpu-single",
        "CPU single core",
        "machine_performance",
        "events_per_s",
        "events/s",
        "higher",
        "guest",
        [],
        1,
        1200.0,
    ),
    (
        "deepswe",
        "DeepSWE trace replay",
        "workload",
        "tool_time_ms",
        "ms",
        "lower",
        "guest",
        STAGES,
        4,
        20000.0,
    ),
]


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def header(
    run_id: str, name: str, trials_per_unit: int, ended_at: str = "2026-11-01T06:00:00.000000Z"
) -> dict:
    benchmarks = []
    for slug, title, section, metric, unit, direction, clock, stages, n, _ in BENCHMARKS:
        metrics = {metric: {"unit": unit, "clock": clock}}
        benchmarks.append(
            {
                "slug": slug,
                "version": "1",
                "title": title,
                "description": f"Synthetic {title}",
                "section": section,
                "metric": metric,
                "unit": unit,
                "direction": direction,
                "statistic": "median",
                "clock": clock,
                "cpus": 2,
                "memory_mib": 4096,
                "trials_per_unit": trials_per_unit,
                "ranking_floor": trials_per_unit,
                "required_capabilities": ["exec"],
                "stage_names": stages,
                "charted": True,
                "steps_include_create_or_build": slug == "create",
                "units": [
                    {"slug": _unit_slug(slug, i, n), "title": "", "definition": {}, "digest": ""}
                    for i in range(n)
                ],
                "measurements": {
                    "metrics": metrics,
                    "stages": {stage: {"unit": "ms", "clock": Clock.GUEST} for stage in stages},
                },
            }
        )
    providers = [
        {
            "slug": slug,
            "name": title,
            "adapter": "synthetic",
            "region": "eu-west" if marker else "us-east",
            "region_marker": marker,
            "region_note": "Timed across the Atlantic." if marker else "",
            "declaration": {"capabilities": ["exec"], "provider": slug},
            "declaration_digest": f"{slug}-declaration",
            "pricing": {"per_vcpu_second": price, "provider_sourced": True},
            "pricing_digest": f"{slug}-pricing",
        }
        for slug, title, _, price, marker in PROVIDERS
    ]
    return {
        "type": "run",
        "schema_version": 2,
        "run": {
            "id": run_id,
            "name": name,
            "status": "completed",
            "created_at": "2026-11-01T00:00:00.000000Z",
            "started_at": "2026-11-01T00:00:01.000000Z",
            "ended_at": ended_at,
        },
        "manifest": {"seed": 7, "synthetic": True},
        "audit_report": None,
        "benchmarks": benchmarks,
        "providers": providers,
    }


def _unit_slug(benchmark: str, index: int, units: int) -> str:
    return "default" if units == 1 else f"{benchmark}-unit-{index + 1}"


def synthetic_run(
    trials: int = 1000,
    seed: int = 1,
    name: str = "synthetic",
    failure_rate: float = 0.02,
    declared_per_unit: int | None = None,
) -> Iterator[str]:
    """JSON Lines of a run with about `trials` trials spread over every cell, ending in the
    version-2 trailer (the count of trial lines and the SHA-256 of the lines before it). The
    benchmarks declare `declared_per_unit` trials per unit (by default the trials each cell
    gets): runs of one database must declare the same, since stored definitions never change."""
    digest = hashlib.sha256()
    count = 0
    for line in _lines(trials, seed, name, failure_rate, declared_per_unit):
        digest.update(line.encode())
        count += 1
        yield line
    trailer = {"sha256": digest.hexdigest(), "trials": count - 1, "type": "end"}
    yield json.dumps(trailer, separators=(",", ":")) + "\n"


def _lines(
    trials: int, seed: int, name: str, failure_rate: float, declared: int | None
) -> Iterator[str]:
    rng = random.Random(seed)
    run_id = str(uuid.UUID(int=rng.getrandbits(128)))
    cells = [
        (benchmark, _unit_slug(benchmark[0], u, benchmark[8]), provider)
        for benchmark in BENCHMARKS
        for u in range(benchmark[8])
        for provider in PROVIDERS
    ]
    per_cell = max(1, trials // len(cells))
    start = datetime(2026, 11, 1, tzinfo=UTC)
    # Trials start 2 s apart by seq, and a failure adds a replacement: the run ends after the
    # last possible one (and at 06:00 at the earliest, as small files always have).
    last = start + timedelta(seconds=2 * 2 * per_cell * len(cells), hours=1)
    ended = _iso(max(last, start + timedelta(hours=6)))
    run_header = header(run_id, name, declared or per_cell, ended)
    yield json.dumps(run_header, separators=(",", ":")) + "\n"
    seq = 0
    for index in range(per_cell * len(cells)):
        benchmark, unit, provider = cells[index % len(cells)]
        seq += 1
        failed = rng.random() < failure_rate
        record = _trial(rng, benchmark, unit, provider, seq, index // len(cells), start, failed)
        yield json.dumps(record, separators=(",", ":")) + "\n"
        if failed:
            seq += 1
            replacement = _trial(rng, benchmark, unit, provider, seq, index // len(cells), start)
            replacement["replaces"] = record["trial"]
            replacement["attempt"] = 2
            yield json.dumps(replacement, separators=(",", ":")) + "\n"


def _trial(rng, benchmark, unit, provider, seq, index, start, failed=False) -> dict:
    slug, _, _, metric, _, direction, _, stages, _, base = benchmark
    speed = provider[2] if direction == Direction.LOWER else 1 / provider[2]
    value = base * speed * rng.lognormvariate(0, 0.08)
    begun = start + timedelta(seconds=seq * 2)
    stage_values = {}
    if stages:
        weights = [0.1, 0.15, 0.2, 0.25, 0.3]
        stage_values = {
            s: value * w * rng.lognormvariate(0, 0.05) for s, w in zip(stages, weights, strict=True)
        }
    return {
        "type": "trial",
        "benchmark": slug,
        "benchmark_version": "1",
        "unit": unit,
        "provider": provider[0],
        "trial": str(uuid.UUID(int=rng.getrandbits(128))),
        "round": 1 + index % 4,
        "seq": seq,
        "attempt": 1,
        "replaces": None,
        "batch": f"bb-{provider[0]}",
        "outcome": Outcome.PROVIDER_FAILURE if failed else Outcome.SUCCESS,
        "owner": Owner.PROVIDER if failed else Owner.NONE,
        "cause": "create: HTTP 503 after deadline" if failed else "",
        "job_host": f"job-{provider[0]}",
        "started_at": _iso(begun),
        "ended_at": _iso(
            begun + timedelta(milliseconds=value if direction == Direction.LOWER else 900)
        ),
        "in_flight": round(rng.uniform(0, 2), 3),
        "placement": {"cpu_count": 2, "cpu_model": "Synthetic CPU", "kernel": "6.1"},
        "host_load": {"cpu_peak": round(rng.uniform(0.1, 0.6), 3), "cpu_throttled": False},
        "metrics": {} if failed else {metric: value},
        "stages": {} if failed else stage_values,
        "cost_usd": value / 1000 * 2 * provider[3],
    }
