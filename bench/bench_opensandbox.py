"""Create and exec latency of `opensandbox` (its real server, on Podman) beside `docker` on the same
engine, in one run.

Usage: .venv/bin/python bench/bench_opensandbox.py [--trials 10] [--calls 20]

Starts the local OpenSandbox stack (runner/providers/opensandbox/local.py: a private Podman
service with the ulimit override, the standard and execd images, opensandbox-server on loopback)
and drives the docker provider through the same Podman service. Each trial creates one sandbox
per provider (2 vCPU / 4 GiB), in a random order per trial so both see the same moments of machine
load, and times on this host's monotonic clock, from adapter entry:

- create: until create returns (opensandbox: POST /v1/sandboxes answered 202 Running, plus the
  execd endpoint lookup; docker: container create, start and inspect);
- tti: from create's entry until the first `true` exec answers (retried on NotReady);
- exec: each of --calls further `true` execs (pooled over trials; opensandbox: POST /command to
  execd through the published port and its /proxy/44772 path; docker: exec create, start, inspect);
- destroy: until destroy returns.

docker sandboxes run with no network; opensandbox ones with bridge networking (the server has no
other mode without its egress sidecar). Prints medians and nearest-rank p95; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "boxbench.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from runner.providers import get_provider  # noqa: E402
from runner.providers.base import NotReady, SandboxSpec  # noqa: E402
from runner.providers.opensandbox import local  # noqa: E402
from stats.estimators import median, percentile  # noqa: E402

METRICS = ("create", "tti", "exec", "destroy")


def one_trial(provider, label: str, calls: int) -> dict:
    spec = SandboxSpec(cpus=2, memory_mib=4096, label=label, lifetime_s=300)
    started = time.monotonic()
    sandbox = provider.create(spec)
    created = time.monotonic()
    while True:
        try:
            provider.exec(sandbox, ["true"], timeout=30)
            break
        except NotReady:
            time.sleep(0.02)
    ready = time.monotonic()
    execs = []
    for _ in range(calls):
        before = time.monotonic()
        provider.exec(sandbox, ["true"], timeout=30)
        execs.append((time.monotonic() - before) * 1000)
    before = time.monotonic()
    provider.destroy(sandbox)
    destroyed = time.monotonic()
    return {
        "create": [(created - started) * 1000],
        "tti": [(ready - started) * 1000],
        "exec": execs,
        "destroy": [(destroyed - before) * 1000],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--calls", type=int, default=20, help="timed execs per sandbox")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="bench-opensandbox-"))
    stack = local.start_stack(
        scratch, local.free_port(), secrets.token_urlsafe(16), settings.VAR_DIR / "images"
    )
    try:
        providers = {
            "docker": get_provider("docker", settings={"host": stack.docker_host}),
            "opensandbox": get_provider(
                "opensandbox", settings={"url": stack.url, "api_key": stack.api_key}
            ),
        }
        samples = {slug: {metric: [] for metric in METRICS} for slug in providers}
        order_rng = random.Random(args.seed)
        for trial in range(args.trials):
            order = list(providers)
            order_rng.shuffle(order)
            for slug in order:
                result = one_trial(providers[slug], f"bb-bench-{trial}", args.calls)
                for metric, values in result.items():
                    samples[slug][metric].extend(values)
        engine = next(c.detail for c in providers["docker"].doctor() if c.name == "engine")
        print(f"host: {platform.node()}, {os.cpu_count()} CPU; engine: {engine}")
        print(f"image: {stack.standard_image}; execd image: {stack.execd_image}")
        print(f"{args.trials} trials per provider, {args.calls} timed execs per sandbox; ms")
        print(
            f"{'provider':<12} " + " ".join(f"{m + ' med':>12} {m + ' p95':>12}" for m in METRICS)
        )
        for slug, by_metric in samples.items():
            cells = []
            for metric in METRICS:
                values = by_metric[metric]
                cells.append(f"{median(values):>12.1f} {percentile(values, 95):>12.1f}")
            print(f"{slug:<12} " + " ".join(cells))
    finally:
        stack.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
