"""Create, time to interactive and exec latency of `docker` (on Podman) against `local`, in one run.

Usage: .venv/bin/python bench/bench_docker_vs_local.py [--trials 20] [--calls 20] [--host URL]

Each trial creates one sandbox per provider (2 vCPU / 4 GiB, no network), in a random order per
trial so both providers see the same moments of machine load, and times create, tti, exec and
destroy as bench/sandbox_timing.py says.

Without --host or DOCKER_HOST, it starts a private Podman service (as the tests do) and stops it
at the end. The standard image is prepared before the first timed step. Prints medians (lower
median) and nearest-rank p95 per provider; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "boxbench.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402

from bench.sandbox_timing import interleaved_trials, print_table  # noqa: E402
from runner.declarations import get_declaration  # noqa: E402
from runner.images.prepare import prepare_image  # noqa: E402
from runner.providers.docker import DockerProvider  # noqa: E402
from runner.providers.local import LocalProvider  # noqa: E402


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
        samples = interleaved_trials(providers, args.trials, args.calls, args.seed)
        engine = next(c.detail for c in docker.doctor() if c.name == "engine")
        print(f"host: {platform.node()}, {os.cpu_count()} CPU; docker: {engine}")
        print(f"image: {prepared.tag} rootfs {prepared.digest[:19]}...")
        print(f"{args.trials} trials per provider, {args.calls} timed execs per sandbox; ms")
        print_table(samples)
    finally:
        if service is not None:
            os.killpg(service.pid, signal.SIGTERM)
            service.wait(timeout=15)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
