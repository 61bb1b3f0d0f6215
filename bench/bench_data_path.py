"""The data path on this job host: Output Stream and the large file transfers on local and docker,
beside a bare `cat` and `cp` of the same number of bytes on the job host, in the same run.

Usage: .venv/bin/python bench/bench_data_path.py [--provider local,docker] [--trials 3]
       [--stream-mib 1024] [--transfer-mib 100] [--host unix:///...]

Each trial runs through the lifecycle as a run's trial does (runner/benchmarks/output_stream.py,
runner/benchmarks/file_transfer.py), with the sizes given here. The baselines, taken before each
provider's trials and again at the end: `cat` of a file of random bytes read by this process
through a pipe and checked as Output Stream checks its stream (a count and a running CRC-32), and
`cp` of a file of the transfer's size in a directory on the job host. The load average is printed
with every figure, since a busy two-core host moves all of them. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "boxbench.settings")

import django

django.setup()

from bench.bench_burst import provider_for  # noqa: E402
from runner.benchmarks import file_transfer, output_stream  # noqa: E402
from runner.benchmarks.base import UnitDefinition  # noqa: E402
from runner.benchmarks.output_stream import StreamCheck  # noqa: E402
from runner.lifecycle import run_trial  # noqa: E402

MIB = 2**20


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f}"


def random_file(path: Path, size: int) -> None:
    with path.open("wb") as f:
        left = size
        while left:
            chunk = os.urandom(min(left, MIB))
            f.write(chunk)
            left -= len(chunk)


def bare_cat(path: Path, size: int) -> float:
    """MiB/s of `cat path` read through a pipe, counted and CRC-checked chunk by chunk."""
    check = StreamCheck(size)
    started = time.monotonic()
    with subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE) as cat:
        assert cat.stdout is not None
        while chunk := cat.stdout.read1(MIB):
            check(chunk)
    seconds = time.monotonic() - started
    assert check.size == size
    return size / MIB / seconds


def bare_cp(path: Path, size: int) -> float:
    """Milliseconds of `cp` of a `size`-byte file, the copy synced, on the job host."""
    target = path.with_suffix(".copy")
    started = time.monotonic()
    subprocess.run(["cp", str(path), str(target)], check=True)
    subprocess.run(["sync", str(target)], check=True)
    ms = (time.monotonic() - started) * 1000
    target.unlink()
    return ms


def baselines(stream: Path, stream_size: int, transfer: Path, size: int) -> str:
    cat = bare_cat(stream, stream_size)
    cp = bare_cp(transfer, size)
    return f"job host: cat {cat:.0f} MiB/s, cp {size // MIB} MiB {cp:.0f} ms ({load()})"


def trial(provider, module, unit: UnitDefinition) -> dict:
    """The trial's measurements by name, and `wall_s`: the whole trial, create to cleanup."""
    started = time.monotonic()
    result = run_trial(provider, module.DEFINITION, unit, module.run, label="bb-bench-datapath")
    wall_s = time.monotonic() - started
    if result.outcome != "success":
        return {"failed": result.cause, "wall_s": wall_s}
    return {"wall_s": wall_s, **{m.name: m.value for m in result.measurements}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default="local,docker")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--stream-mib", type=int, default=1024)
    parser.add_argument("--transfer-mib", type=int, default=100)
    parser.add_argument("--host", default=os.environ.get("DOCKER_HOST", ""))
    args = parser.parse_args()
    stream_size, transfer_size = args.stream_mib * MIB, args.transfer_mib * MIB
    stream_unit = UnitDefinition("stream", definition={"bytes": stream_size})
    transfer_unit = UnitDefinition("large", definition={"bytes": transfer_size})
    print(f"host: {os.cpu_count()} CPU; {args.stream_mib} MiB streamed, {args.transfer_mib} MiB")
    with tempfile.TemporaryDirectory(prefix="bench-datapath-", dir=Path.home()) as directory:
        scratch = Path(directory)
        stream, transfer = scratch / "stream.bin", scratch / "transfer.bin"
        random_file(stream, stream_size)
        random_file(transfer, transfer_size)
        for name in args.provider.split(","):
            (scratch / name).mkdir()
            provider, stop = provider_for(name, scratch / name, args.host)
            try:
                print(baselines(stream, stream_size, transfer, transfer_size))
                rates, uploads, downloads = [], [], []
                for _ in range(args.trials):
                    got = trial(provider, output_stream, stream_unit)
                    up = trial(provider, file_transfer.UPLOAD, transfer_unit)
                    down = trial(provider, file_transfer.DOWNLOAD, transfer_unit)
                    for figures in (got, up, down):
                        if "failed" in figures:
                            print(f"  {name}: failed: {figures['failed']}")
                    rates.append(got.get("stream_mib_s", float("nan")))
                    uploads.append(up.get("upload_ms", float("nan")))
                    downloads.append(down.get("download_ms", float("nan")))
                    print(
                        f"  {name}: output-stream {rates[-1]:.0f} MiB/s (trial "
                        f"{got['wall_s']:.1f} s), upload {uploads[-1]:.0f} ms (trial "
                        f"{up['wall_s']:.1f} s), download {downloads[-1]:.0f} ms (trial "
                        f"{down['wall_s']:.1f} s) ({load()})"
                    )
                print(
                    f"{name} medians: output-stream {statistics.median(rates):.0f} MiB/s, "
                    f"upload {statistics.median(uploads):.0f} ms, "
                    f"download {statistics.median(downloads):.0f} ms"
                )
            finally:
                if stop:
                    stop()
        print(baselines(stream, stream_size, transfer, transfer_size))


if __name__ == "__main__":
    main()
