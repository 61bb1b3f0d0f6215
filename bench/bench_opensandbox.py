"""Create and exec latency of `opensandbox` (its real server, on Podman) beside `docker` on the same
engine, in one run.

Usage: .venv/bin/python bench/bench_opensandbox.py [--trials 10] [--calls 20]

Starts the local OpenSandbox stack (runner/providers/opensandbox/local.py: a private Podman
service with the ulimit override, the standard and execd images, opensandbox-server on loopback)
and drives the docker provider through the same Podman service. Each trial creates one sandbox
per provider (2 vCPU / 4 GiB), in a random order per trial so both see the same moments of machine
load, and times create, tti, exec and destroy as bench/sandbox_timing.py says. What each covers:

- create: opensandbox: the SDK's create, POST /v1/sandboxes answered 202 Running plus the
  execd and egress endpoint lookups; docker: container create, start and inspect;
- exec: opensandbox: the SDK's POST /command to execd through the published port and its
  /proxy/44772 path; docker: exec create, start, inspect.

docker sandboxes run with no network; opensandbox ones with bridge networking (the server has no
other mode without its egress sidecar). Prints medians and nearest-rank p95; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import platform
import secrets
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "boxbench.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402

from bench.sandbox_timing import interleaved_trials, print_table  # noqa: E402
from runner.providers import get_provider  # noqa: E402
from runner.providers.opensandbox import local  # noqa: E402


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
        samples = interleaved_trials(providers, args.trials, args.calls, args.seed)
        engine = next(c.detail for c in providers["docker"].doctor() if c.name == "engine")
        print(f"host: {platform.node()}, {os.cpu_count()} CPU; engine: {engine}")
        print(f"image: {stack.standard_image}; execd image: {stack.execd_image}")
        print(f"{args.trials} trials per provider, {args.calls} timed execs per sandbox; ms")
        print_table(samples)
    finally:
        stack.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
