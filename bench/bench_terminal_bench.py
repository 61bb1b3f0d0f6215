"""Median Setup, Solve and Verify of each Terminal-Bench-style task, on `local` and `docker`.

Usage: .venv/bin/python bench/bench_terminal_bench.py [--trials 5] [--provider local,docker]
       [--task SLUG ...]

Runs the workload's own trial (runner/benchmarks/terminal_bench.py) through the lifecycle, one
trial at a time, outside any run: what a task costs a sandbox here, so a plan can be sized and
the tasks kept short. `docker` needs an engine (DOCKER_HOST or the Podman socket) with the
pinned standard image prepared (`manage.py bench image prepare`). Prints one line per task and
provider: the medians in ms and the outcomes, with `uptime`'s load. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "boxbench.settings")

import django

django.setup()

from runner import lifecycle  # noqa: E402
from runner.benchmarks import terminal_bench  # noqa: E402
from runner.declarations import get_declaration  # noqa: E402
from runner.limits import Limits  # noqa: E402
from runner.outcomes import MeasurementKind  # noqa: E402
from runner.providers import get_provider  # noqa: E402
from runner.providers.local import LocalProvider  # noqa: E402

LIMITS = Limits(poll_interval_s=0.1)
TIMED = (MeasurementKind.METRIC, MeasurementKind.STAGE)


def provider_for(slug: str):
    if slug == "local":
        return LocalProvider(get_declaration("local"), {"root": Path(tempfile.mkdtemp())})
    return get_provider(slug)


def median(values: dict[str, list[float]], name: str) -> str:
    found = values.get(name)
    return f"{statistics.median(found):7.0f}" if found else "      -"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--provider", default="local,docker")
    parser.add_argument("--task", action="append", help="Task slug (default: every shipped task)")
    args = parser.parse_args()
    units = [u for u in terminal_bench.units() if not args.task or u.slug in args.task]
    print(f"load {os.getloadavg()[0]:.2f}; {args.trials} trials per task and provider (ms)")
    print(
        f"{'task':24} {'provider':8} {'setup':>7} {'solve':>7} {'verify':>7} {'total':>7}  outcomes"
    )
    for slug in args.provider.split(","):
        provider = provider_for(slug)
        for unit in units:
            values: dict[str, list[float]] = {}
            outcomes: Counter[str] = Counter()
            for _ in range(args.trials):
                result = lifecycle.run_trial(
                    provider,
                    terminal_bench.DEFINITION,
                    unit,
                    terminal_bench.run,
                    label="bench-terminal-bench",
                    limits=LIMITS,
                )
                outcomes[str(result.outcome)] += 1
                for m in result.measurements:
                    if m.value is not None and m.kind in TIMED:
                        values.setdefault(m.name, []).append(m.value)
            medians = " ".join(
                median(values, name) for name in ("Setup", "Solve", "Verify", "task_time")
            )
            print(f"{unit.slug:24} {slug:8} {medians}  {dict(outcomes)}", flush=True)
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
