"""The runner's added latency per exec on `local`, beside a bare `bwrap ... true` subprocess.

Prints, over the same run and interleaved call by call:
  added latency   total - guest runtime of `true` through LocalProvider.exec + the clock wrapper
  bare bwrap      a fresh `bwrap --unshare-all ... true` subprocess, wall time
  wrapper runtime the guest runtime of `true` inside the wrapper (its own overhead)

Usage: .venv/bin/python bench/bench_exec_latency.py [CALLS]
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runner import clock
from runner.declarations import get_declaration
from runner.providers.base import SandboxSpec
from runner.providers.local import LocalProvider
from runner.providers.local.toolchain import toolchain_binds


def pct(values, p):
    ordered = sorted(values)
    return ordered[max(1, -(-p * len(ordered) // 100)) - 1]


def main(calls: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="bb-bench-"))
    provider = LocalProvider(get_declaration("local"), {"root": root})
    sandbox = provider.create(SandboxSpec(2, 4096, "bb-bench", 600))
    bare = ["bwrap", "--unshare-all", *toolchain_binds(), "--proc", "/proc", "--dev", "/dev"]
    bare += ["--", "true"]
    script = clock.wrap("true")
    added, runtime, bare_ms = [], [], []
    try:
        for _ in range(calls):
            started = time.monotonic()
            key = clock.new_key()
            result = provider.exec(
                sandbox, ["/bin/bash", "-c", script], 10, stdin=clock.key_input(key)
            )
            total = (time.monotonic() - started) * 1000
            _, timing = clock.parse_trailer(result.stderr, key)
            added.append(total - timing.wall_ms)
            runtime.append(timing.wall_ms)
            started = time.monotonic()
            subprocess.run(bare, check=True)
            bare_ms.append((time.monotonic() - started) * 1000)
    finally:
        provider.destroy(sandbox)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"calls: {calls} (interleaved), load average {load} on {os.cpu_count()} CPUs")
    for name, values in (
        ("added latency (total - runtime)", added),
        ("bare bwrap ... true subprocess", bare_ms),
        ("guest runtime of true in wrapper", runtime),
    ):
        print(
            f"{name:34} p50 {pct(values, 50):8.3f} ms  p95 {pct(values, 95):8.3f} ms  "
            f"mean {statistics.fmean(values):8.3f} ms"
        )
    print(f"p50 difference (added - bare): {pct(added, 50) - pct(bare_ms, 50):+.3f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
