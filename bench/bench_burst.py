"""Burst on this job host: the scheduling delay per tier, beside the job host's own floor, and
each tier's time to last ready and throughput.

Usage: .venv/bin/python bench/bench_burst.py [--provider local|docker|e2b-fake] [--tiers 1,8,32]
       [--trials 3] [--host URL] [--all-at-once]

Each trial is one burst run through the lifecycle exactly as a run's trial is
(runner/benchmarks/burst.py), whatever the provider's declared concurrent-sandbox limit: this
script measures the job host, which the planner would otherwise keep from tiers above it.
`e2b-fake` is E2B's loopback fake with no limits (its sandboxes are local ones, made on this same
host, so its delays are an upper bound of a remote provider's). The reference beside each tier is
the delay of as many pre-started threads woken at one planned instant that send nothing: the
floor this host's scheduler sets. Prints nearest-rank p50 and p99 and the maximum of the delay
over every request of the tier's trials, the bound, and how many trials stayed within it;
nothing is asserted.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "boxbench.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402

from bench.bench_docker_vs_local import start_podman  # noqa: E402
from runner.benchmarks import burst  # noqa: E402
from runner.benchmarks.base import UnitDefinition  # noqa: E402
from runner.declarations import get_declaration  # noqa: E402
from runner.lifecycle import run_trial  # noqa: E402
from runner.providers import get_provider  # noqa: E402
from runner.providers.local import LocalProvider  # noqa: E402
from stats.estimators import percentile  # noqa: E402


def floor_delays(n: int) -> list[float]:
    """Delays of n pre-started threads that only wake at one planned instant (ms)."""
    born = threading.Barrier(n + 1)
    delays: list[float] = [0.0] * n
    start = [0.0]

    def wake(i: int) -> None:
        born.wait()
        time.sleep(max(0.0, start[0] - time.monotonic()))
        delays[i] = (time.monotonic() - start[0]) * 1000

    threads = [threading.Thread(target=wake, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    start[0] = time.monotonic() + 0.05
    born.wait()
    for thread in threads:
        thread.join()
    return delays


def spread(values: list[float]) -> str:
    p50, p99 = percentile(values, 50), percentile(values, 99)
    return f"p50 {p50:7.1f}  p99 {p99:7.1f}  max {max(values):7.1f}"


def provider_for(name: str, scratch: Path, host: str):
    if name == "local":
        return LocalProvider(get_declaration("local"), {"root": str(scratch / "sandboxes")}), None
    if name == "e2b-fake":
        from runner.providers.fakes.e2b import E2BFake

        fake = E2BFake(scratch / "e2b", max_concurrent=10_000).start()
        return get_provider("e2b", settings=fake.adapter_settings()), fake.stop
    from runner.images.prepare import prepare_image
    from runner.providers.docker import DockerProvider

    service = None
    if not host:
        service, host = start_podman(scratch)
    docker = DockerProvider(get_declaration("docker"), {"host": host})
    prepare_image(docker, settings.VAR_DIR / "images", log=lambda m: None)
    return docker, (service.terminate if service else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default="local", choices=["local", "docker", "e2b-fake"])
    parser.add_argument("--tiers", default="1,8")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--host", default=os.environ.get("DOCKER_HOST", ""))
    parser.add_argument(
        "--all-at-once",
        action="store_true",
        help="Send every request at the burst's start even where the provider declares a "
        "creation rate (the fake then answers it, unlimited): the job host's sending alone.",
    )
    args = parser.parse_args()
    tiers = [int(t) for t in args.tiers.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-burst-") as directory:
        provider, stop = provider_for(args.provider, Path(directory), args.host)
        if args.all_at_once:
            provider.declaration = dataclasses.replace(provider.declaration, create_rate_per_s=None)
        try:
            print(f"host: {os.cpu_count()} CPU, load {os.getloadavg()[0]:.1f}; {args.provider}")
            print(f"bound: {burst.SCHEDULING_BOUND_MS:g} ms (largest delay of a burst)")
            for tier in tiers:
                measure(provider, tier, args.trials)
        finally:
            if stop:
                stop()


def measure(provider, tier: int, trials: int) -> None:
    unit = UnitDefinition(
        str(tier),
        definition={
            "tier": tier,
            "sandboxes": tier,
            "scheduling_bound_ms": burst.SCHEDULING_BOUND_MS,
        },
    )
    delays, floor, last, throughput, within, outcomes = [], [], [], [], 0, []
    for _ in range(trials):
        floor += floor_delays(tier)
        result = run_trial(provider, burst.DEFINITION, unit, burst.run, label="bb-bench-burst")
        outcomes.append(result.outcome)
        delays += [r["sent_ms"] - r["planned_ms"] for r in result.requests if r["sent_ms"]]
        metrics = {m.name: m.value for m in result.measurements}
        within += metrics.get("sched_delay_max_ms", 1e9) <= burst.SCHEDULING_BOUND_MS
        if "last_ready_ms" in metrics and result.outcome == "success":
            last.append(metrics["last_ready_ms"])
            throughput.append(metrics["throughput_per_s"])
    print(f"tier {tier:>4}: {trials} trials, outcomes {sorted(set(outcomes))}")
    print(f"  scheduling delay ms  {spread(delays)}   ({within}/{trials} within the bound)")
    print(f"  reference: idle wake {spread(floor)}")
    if last:
        print(
            f"  last ready ms {percentile(last, 50):8.1f} (lower median), throughput "
            f"{percentile(throughput, 50):6.1f} ready/s"
        )


if __name__ == "__main__":
    main()
