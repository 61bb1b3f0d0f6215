"""A small, deterministic run in the raw-data format (docs/raw-data.md), imported through
`bench import` by the dashboard tests.

Three providers and a refused fourth; a three-unit workload with stages (its units run one after
another and differ in length), a single-unit sandbox operation with stages that drifts (its audit
fails on the trend check), and a higher-is-better machine test without stages.
"""

import json
import uuid
from datetime import UTC, datetime, timedelta

import numpy as np

RUN_ID = "5b0c1a2e-0000-4000-8000-000000000001"
STAGES = {"deepswe": ["setup", "replay", "verify"], "create": ["create", "ready"], "cpu": []}
PROVIDERS = [
    # slug, name, region marker, speed factor, provider-sourced pricing
    ("local", "Local sandbox", "", 1.0, True),
    ("docker", "Docker", "", 1.6, True),
    ("boat", "Boat", "EU", 1.3, True),
]
REFUSED = ("tiny", "Tiny Cloud")


def _provider(slug, name, marker, sourced):
    return {
        "slug": slug,
        "name": name,
        "adapter": slug,
        "region": "eu-west" if marker else "local",
        "region_marker": marker,
        "region_note": "Timed from the US job host: includes the transatlantic round trip."
        if marker
        else "",
        "declaration": {"schema_version": 1, "provider": slug, "capabilities": ["exec"]},
        "declaration_digest": f"{slug:0<64}"[:64],
        "pricing": {"provider_sourced": sourced, "currency": "USD", "per_vcpu_second": 0.00001},
        "pricing_digest": "",
    }


def _benchmark(slug, title, section, direction, units, stages, metric_unit, floor):
    return {
        "slug": slug,
        "version": "1",
        "title": title,
        "description": f"{title} benchmark.",
        "section": section,
        "metric": "total",
        "unit": metric_unit,
        "direction": direction,
        "statistic": "median",
        "clock": "job_host",
        "cpus": 2,
        "memory_mib": 4096,
        "trials_per_unit": 20,
        "ranking_floor": floor,
        "required_capabilities": ["exec"],
        "stage_names": stages,
        "charted": True,
        "steps_include_create_or_build": False,
        "units": [
            {"slug": u, "title": u.replace("-", " ").title(), "definition": {}, "digest": ""}
            for u in units
        ],
        "measurements": {
            "metrics": {"total": {"unit": metric_unit, "clock": "job_host"}},
            "stages": {s: {"unit": "ms", "clock": "guest"} for s in stages},
        },
    }


BENCHMARKS = [
    _benchmark(
        "deepswe",
        "DeepSWE replay",
        "workload",
        "lower",
        ["trace-a", "trace-b", "trace-c"],
        STAGES["deepswe"],
        "ms",
        40,
    ),
    _benchmark(
        "create", "Create", "sandbox_operations", "lower", ["create"], STAGES["create"], "ms", 20
    ),
    _benchmark("cpu", "CPU", "machine_performance", "higher", ["cpu"], [], "ops/s", 20),
]


def run_lines(trials_per_cell: int = 20, audit_report=None) -> list[str]:
    rng = np.random.default_rng(7)
    start = datetime(2026, 11, 1, tzinfo=UTC)
    providers = [_provider(s, n, m, c) for s, n, m, _, c in PROVIDERS]
    providers.append(_provider(REFUSED[0], REFUSED[1], "", False))
    header = {
        "type": "run",
        "schema_version": 1,
        "run": {
            "id": RUN_ID,
            "name": "dashboard-fixture",
            "status": "completed",
            "created_at": "2026-11-01T00:00:00.000000Z",
            "started_at": "2026-11-01T00:00:00.000000Z",
            "ended_at": "2026-11-01T06:00:00.000000Z",
        },
        "manifest": {
            "seed": 7,
            "image_digests": {"deepswe": "sha256:" + "ab" * 32, "standard": "sha256:" + "89" * 32},
            "refusals": [
                {
                    "provider": REFUSED[0],
                    "benchmark": b["slug"],
                    "code": "R401",
                    "missing": "snapshot",
                    "message": "Tiny Cloud lacks the snapshot capability",
                }
                for b in BENCHMARKS
            ],
        },
        "audit_report": audit_report,
        "benchmarks": BENCHMARKS,
        "providers": providers,
    }
    lines = [json.dumps(header)]
    seq = 0
    for benchmark in BENCHMARKS:
        for u_index, unit in enumerate(benchmark["units"]):
            for slug, _, _, factor, _ in PROVIDERS:
                # Boat never completes trace-c: the workload value substitutes the slowest time.
                n = 0 if (slug == "boat" and unit["slug"] == "trace-c") else trials_per_cell
                failures = 1 if slug == "docker" and benchmark["slug"] == "create" else 0
                for i in range(n + failures):
                    seq += 1
                    ok = i < n
                    stages = {}
                    if benchmark["slug"] == "cpu":
                        total = float(1000 / factor * rng.lognormal(0, 0.05))
                    else:
                        base = [200, 900, 150] if benchmark["slug"] == "deepswe" else [300, 60]
                        # Create slows down over the run (3 % per trial): its trend check fails.
                        drift = 1 + 0.03 * i if benchmark["slug"] == "create" else 1
                        scale = factor * (1 + 0.4 * u_index) * drift
                        values = [b * scale * rng.lognormal(0, 0.1) for b in base]
                        stages = dict(zip(benchmark["stage_names"], values, strict=True))
                        total = sum(values) + 5.0
                    lines.append(
                        trial_line(
                            benchmark["slug"],
                            unit["slug"],
                            slug,
                            seq,
                            i,
                            start,
                            ok,
                            {"total": round(total, 3)} if ok else {},
                            {k: round(v, 3) for k, v in stages.items()} if ok else {},
                            round(total * 2e-8, 12) if ok else 0.0,
                        )
                    )
    return lines


def trial_line(
    benchmark, unit, provider, seq, i, start, ok, metrics, stages, cost_usd, version="1"
) -> str:
    """One trial's raw-data line: trial `i` of its cell, the `seq`-th of the run, 30 s apart."""
    began = start + timedelta(seconds=seq * 30)
    return json.dumps(
        {
            "type": "trial",
            "benchmark": benchmark,
            "benchmark_version": version,
            "unit": unit,
            "provider": provider,
            "trial": str(uuid.UUID(int=seq)),
            "round": 1 + i % 4,
            "seq": seq,
            "attempt": 1,
            "replaces": None,
            "batch": f"{provider}-b1",
            "outcome": "success" if ok else "provider_failure",
            "owner": "" if ok else "provider",
            "cause": "" if ok else "create returned HTTP 503",
            "job_host": "job-1",
            "started_at": began.isoformat().replace("+00:00", "Z"),
            "ended_at": (began + timedelta(seconds=20)).isoformat().replace("+00:00", "Z"),
            "in_flight": 0.0,
            "placement": {"cpu_count": 2},
            "host_load": {"cpu_peak": 0.3},
            "metrics": metrics,
            "stages": stages,
            "cost_usd": cost_usd,
            "clock_gates": {"stages": dict.fromkeys(stages, "pass")} if stages else {},
        }
    )


def write_run(path, trials_per_cell: int = 20) -> str:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(run_lines(trials_per_cell)) + "\n")
    return str(path)
