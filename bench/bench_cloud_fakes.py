"""Create and exec latency of the cloud adapters against their loopback fakes, beside a reference.

    python bench/bench_cloud_fakes.py [--creates 10] [--execs 50] [--provider e2b,modal]

For each provider: create (adapter entry to return, as the lifecycle times it: Daytona's and
Vercel's include polling until running, Modal's returns once Modal accepted the sandbox, before
it is scheduled; the SDK polls for scheduling every 0.5 s), create+ready (create, then the
readiness check until `true` answers) and `true` through exec on a warm connection, as lower
medians and p95 in ms (nearest rank, the conventions of docs/methodology.md).

The reference, measured in the same run on the same machine, is the local provider: the
bubblewrap sandboxes every fake runs its commands in. The difference between a fake's figure and
the reference is the adapter's and the fake's own cost (HTTP or gRPC, the fake's provisioning
delay and polling); neither describes the providers themselves.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "boxbench.settings")

import django

django.setup()

from runner.declarations import get_declaration  # noqa: E402
from runner.providers import get_provider  # noqa: E402
from runner.providers.base import SandboxSpec  # noqa: E402
from runner.providers.demo import FAKES, fake_class  # noqa: E402
from runner.providers.local import LocalProvider  # noqa: E402
from runner.readiness import readiness_check  # noqa: E402

SPEC = SandboxSpec(cpus=2, memory_mib=4096, label="bb-bench-fakes", lifetime_s=300)
OPERATIONS = ("create", "create+ready", "exec")


def percentile(values, p):
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * p // 100) - 1)]


def ms_since(started: float) -> float:
    return (time.monotonic() - started) * 1000


def measure(provider, creates: int, execs: int) -> dict[str, list[float]]:
    samples = {name: [] for name in OPERATIONS}
    provider.list_sandboxes()  # untimed, as a chain's account check runs before its first trial
    for _ in range(creates):
        started = time.monotonic()
        sandbox = provider.create(SPEC)
        samples["create"].append(ms_since(started))
        readiness_check(provider, sandbox)
        samples["create+ready"].append(ms_since(started))
        provider.destroy(sandbox)
    sandbox = provider.create(SPEC)
    readiness_check(provider, sandbox)
    for _ in range(execs):
        started = time.monotonic()
        provider.exec(sandbox, ["true"], 30)
        samples["exec"].append(ms_since(started))
    provider.destroy(sandbox)
    return samples


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--creates", type=int, default=10)
    parser.add_argument("--execs", type=int, default=50)
    parser.add_argument("--provider", default=",".join(FAKES), help="comma-separated fakes")
    args = parser.parse_args()
    slugs = [slug.strip() for slug in args.provider.split(",") if slug.strip()]
    with tempfile.TemporaryDirectory() as root:
        local = LocalProvider(get_declaration("local"), {"root": root})
        reference = measure(local, args.creates, args.execs)
    results = {}
    for slug in slugs:
        with tempfile.TemporaryDirectory() as root:
            fake = fake_class(slug)(root).start()
            try:
                provider = get_provider(slug, settings=fake.adapter_settings())
                results[slug] = measure(provider, args.creates, args.execs)
            finally:
                fake.stop()
    print(
        f"{'provider':<9} {'op':<13} {'n':>4} {'median ms':>10} {'p95 ms':>8} "
        f"{'local median':>13} {'local p95':>10}"
    )
    for slug, samples in results.items():
        for name in OPERATIONS:
            values, ref = samples[name], reference[name]
            print(
                f"{slug:<9} {name:<13} {len(values):>4} {statistics.median_low(values):>10.1f} "
                f"{percentile(values, 95):>8.1f} {statistics.median_low(ref):>13.1f} "
                f"{percentile(ref, 95):>10.1f}"
            )


if __name__ == "__main__":
    import logging

    logging.disable(logging.INFO)
    main()
