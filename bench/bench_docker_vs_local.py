"""Create, time to interactive and exec latency of `docker` (on Podman) against `local`, in one run.

Usage: .venv/bin/python bench/bench_docker_vs_local.py [--trials 20] [--calls 20] [--host URL]

Each trial creates one sandbox per provider (2 vCPU / 4 GiB, no network), in a random order per
trial so both providers see the same moments of machine load, and times on this host's monotonic
clock, from adapter entry:

- create: until create returns;
- tti: from create's entry until the first `true` exec answers (create + readiness, retried
  on NotReady like the lifecycle's check);
- exec: each of --calls further `true` execs (pooled over trials);
- destroy: until destroy returns.

Without --host or DOCKER_HOST, it starts a private Podman service (as the tests do) and stops it
at the end. The standard image is prepared before the first timed step. Prints medians (lower
median) and nearest-rank p95 per provider; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "boxbench.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from runner.declarations import get_declaration  # noqa: E402
from runner.images.prepare import prepare_image  # noqa: E402
from runner.providers.base import NotReady, SandboxSpec  # noqa: E402
from runner.providers.docker import DockerProvider  # noqa: E402
from runner.providers.local import LocalProvider  # noqa: E402
from stats.estimators import median, percentile  # noqa: E402

METRICS = ("create", "tti", "exec", "destroy")


def start_podman(directory: Path):
    podman = shutil.which("podman")
    if podman is None:
        sys.exit("podman is not installed and no --host/DOCKER_HOST is given")
    socket_path = directory / "podman.sock"
    service = subprocess.Popen(
        [podman, "--runtime", "runc", "system", "service", "--time=0", f"unix://{socket_path}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while not socket_path.exists():
        if time.monotonic() > deadline or service.poll() is not None:
            sys.exit("podman system service did not start")
        time.sleep(0.1)
    time.sleep(0.5)  # the socket file appears just before the service answers
    return service, f"unix://{socket_path}"


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
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--calls", type=int, default=20, help="timed execs per sandbox")
    parser.add_argument("--host", default=os.environ.get("DOCKER_HOST", ""))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="bench-docker-"))
    service = None
    host = args.host
    if not host:
        service, host = start_podman(scratch)
    try:
        docker = DockerProvider(get_declaration("docker"), {"host": host})
        local = LocalProvider(get_declaration("local"), {"root": scratch / "sandboxes"})
        prepared = prepare_image(docker, settings.VAR_DIR / "images", log=lambda m: None)
        providers = {"local": local, "docker": docker}
        samples = {slug: {metric: [] for metric in METRICS} for slug in providers}
        order_rng = random.Random(args.seed)
        for trial in range(args.trials):
            order = list(providers)
            order_rng.shuffle(order)
            for slug in order:
                result = one_trial(providers[slug], f"bb-bench-{trial}", args.calls)
                for metric, values in result.items():
                    samples[slug][metric].extend(values)
        engine = next(c.detail for c in docker.doctor() if c.name == "engine")
        print(f"host: {platform.node()}, {os.cpu_count()} CPU; docker: {engine}")
        print(f"image: {prepared.tag} rootfs {prepared.digest[:19]}...")
        print(f"{args.trials} trials per provider, {args.calls} timed execs per sandbox; ms")
        print(f"{'provider':<8} " + " ".join(f"{m + ' med':>12} {m + ' p95':>12}" for m in METRICS))
        for slug, by_metric in samples.items():
            cells = []
            for metric in METRICS:
                values = by_metric[metric]
                cells.append(f"{median(values):>12.1f} {percentile(values, 95):>12.1f}")
            print(f"{slug:<8} " + " ".join(cells))
    finally:
        if service is not None:
            os.killpg(service.pid, signal.SIGTERM)
            service.wait(timeout=15)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
