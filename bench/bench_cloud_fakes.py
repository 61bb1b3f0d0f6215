"""Create and exec latency of the HTTP cloud adapters against their loopback fakes.

    python bench/bench_cloud_fakes.py [--creates 10] [--execs 50]

For each provider: create (adapter entry to return, as the lifecycle times it; Daytona's includes
polling until `started`) and `true` through exec on a warm connection, as medians and p95 in ms.
The fakes run commands in local bubblewrap sandboxes, so the figures are this machine's HTTP and
sandbox overhead, not the providers'.
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

import django  # noqa: E402

django.setup()

from runner.lifecycle import readiness_check  # noqa: E402
from runner.providers import get_provider  # noqa: E402
from runner.providers.base import SandboxSpec  # noqa: E402
from runner.providers.demo import fake_class  # noqa: E402


def percentile(values, p):
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * p // 100) - 1)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--creates", type=int, default=10)
    parser.add_argument("--execs", type=int, default=50)
    args = parser.parse_args()
    spec = SandboxSpec(cpus=2, memory_mib=4096, label="bb-bench-fakes", lifetime_s=300)
    print(f"{'provider':<9} {'op':<7} {'n':>4} {'median ms':>10} {'p95 ms':>8}")
    for slug in ("e2b", "daytona"):
        with tempfile.TemporaryDirectory() as root:
            fake = fake_class(slug)(root).start()
            try:
                provider = get_provider(slug, settings=fake.adapter_settings())
                creates, execs = [], []
                for _ in range(args.creates):
                    started = time.monotonic()
                    sandbox = provider.create(spec)
                    creates.append((time.monotonic() - started) * 1000)
                    provider.destroy(sandbox)
                sandbox = provider.create(spec)
                readiness_check(provider, sandbox)
                for _ in range(args.execs):
                    started = time.monotonic()
                    provider.exec(sandbox, ["true"], 30)
                    execs.append((time.monotonic() - started) * 1000)
                provider.destroy(sandbox)
            finally:
                fake.stop()
        for name, values in (("create", creates), ("exec", execs)):
            print(
                f"{slug:<9} {name:<7} {len(values):>4} {statistics.median(values):>10.1f} "
                f"{percentile(values, 95):>8.1f}"
            )


if __name__ == "__main__":
    import logging

    logging.disable(logging.INFO)
    main()
