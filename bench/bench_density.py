"""Density on this job host: how many idle sandboxes a provider reached and the job host's memory
per idle sandbox, beside the memory the job host had available before.

Usage: .venv/bin/python bench/bench_density.py [--provider local|docker] [--cap 16] [--trials 2]

Each trial runs through the lifecycle as a run's trial does (runner/benchmarks/density.py), with
the cap given here. The memory figure is the drop of the job host's available memory over the
count: other work on the host moves it too, so it is printed with the available memory it was
read against. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "boxbench.settings")

import django

django.setup()

import psutil  # noqa: E402

from bench.bench_burst import provider_for  # noqa: E402
from runner.benchmarks import density  # noqa: E402
from runner.benchmarks.base import UnitDefinition  # noqa: E402
from runner.lifecycle import run_trial  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default="local", choices=["local", "docker"])
    parser.add_argument("--cap", type=int, default=16)
    parser.add_argument("--trials", type=int, default=2)
    args = parser.parse_args()
    unit = UnitDefinition("default", definition={"cap": args.cap})
    with tempfile.TemporaryDirectory(prefix="bench-density-") as directory:
        provider, stop = provider_for(args.provider, Path(directory), "")
        try:
            print(f"host: {os.cpu_count()} CPU, load {os.getloadavg()[0]:.1f}; {args.provider}")
            for _ in range(args.trials):
                available = psutil.virtual_memory().available / 2**20
                result = run_trial(
                    provider, density.DEFINITION, unit, density.run, label="bb-bench-density"
                )
                m = {x.name: x.value for x in result.measurements}
                print(
                    f"  {result.outcome}: reached {m.get('sandboxes_reached'):.0f} of cap "
                    f"{args.cap}, refused {m.get('refused'):.0f}, memory per idle sandbox "
                    f"{m.get('memory_per_sandbox_mib', float('nan')):.1f} MiB "
                    f"(available before: {available:.0f} MiB)"
                )
        finally:
            if stop:
                stop()


if __name__ == "__main__":
    main()
