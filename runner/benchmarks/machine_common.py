"""Shared parts of the Machine Performance benchmarks (runner/benchmarks/machine_*.py).

Each benchmark runs a real tool inside the sandbox (sysbench, fio, a hard-link loop) as a background
command inside the guest clock wrapper, polled until it exits, so its figures come from the
sandbox's own clock and no synchronous call waits for seconds; short probes stay synchronous.
Pre-test checks turn a working directory that rejects O_DIRECT or lacks free space into a Missed
trial. The cache flags of the audit (common methodology, "Cache Flags") are computed here from each
trial's own data and recorded as measurements of kind "metric" named exactly as the audit's columns
(stats/audit.py, COLUMNS): flag_throughput_ceiling, flag_cached_direct_read, flag_cpu_bound and
flag_throttled, with value 0 or 1 and unit "flag" (docs/machine.md).

The parsers and flag rules are pure functions, tested directly.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable
from typing import Any

from runner.benchmarks.base import (
    BenchmarkDefinition,
    BenchmarkError,
    Missed,
    ProviderFailure,
    TrialContext,
    UnitDefinition,
)
from runner.outcomes import Clock, ClockGate, Direction, Section

WORKDIR = "/app"
FIO_FILE = f"{WORKDIR}/.boxbench-fio"
# Physical ceilings: a figure above one of these is a cache, not a device or a memory bus.
CEILINGS = {
    "disk_seq_mib_s": 20_000.0,  # faster than any single NVMe device today
    "rand_iops": 2_000_000.0,  # 4 KiB random IOPS at queue depth 1 from one job
    "memory_mib_s": 400_000.0,  # above the bandwidth of any current server socket
}
CACHED_READ_LATENCY_US = 5.0  # an O_DIRECT 4 KiB read faster than this never reached a device
CPU_BOUND_PERCENT = 90.0  # the tool's own CPU use: the run measured the CPU, not the device
THROTTLE_DROP = 0.25  # the last third of a CPU run slower than the first third by this share
CPU_MAX_PRIME = 20_000  # sysbench cpu's work unit: one event checks primes up to this
TOOL_MARGIN_S = 120.0  # time limit of a tool run beyond its own runtime cap (start, fsync, exit)
LAYOUT_LIMIT_S = 300.0  # 256 MiB even at 1 MiB/s; only a hung sandbox reaches it
FLAGS = ("flag_throughput_ceiling", "flag_cached_direct_read", "flag_cpu_bound", "flag_throttled")


def machine_definition(slug: str, title: str, description: str, **fields) -> BenchmarkDefinition:
    defaults: dict[str, Any] = {
        "section": Section.MACHINE_PERFORMANCE,
        "clock": Clock.GUEST,
        "cpus": 2,
        "memory_mib": 4096,
        "required_capabilities": ("exec",),
        "procedure_timeout_s": 300.0,
        "lifetime_s": 600.0,
    }
    defaults.update(fields)
    return BenchmarkDefinition(slug=slug, title=title, description=description, **defaults)


def throughput_definition(
    slug: str, title: str, description: str, *, version: str, metric: str
) -> BenchmarkDefinition:
    """A machine benchmark whose main metric is a throughput in MiB/s, higher is better."""
    return machine_definition(
        slug,
        title,
        description,
        version=version,
        metric=metric,
        unit="MiB/s",
        direction=Direction.HIGHER,
    )


def one_unit(slug: str, title: str, parameters: dict) -> Callable[[], list[UnitDefinition]]:
    """The units() of a machine benchmark with a single unit and its parameters."""
    return lambda: [UnitDefinition(slug, title, definition=parameters)]


def run_tool(
    ctx: TrialContext, command: str, timeout: float, what: str, *, check_gate: bool = True
) -> str:
    """Run one tool run in the background, polled until it exits, on the sandbox's clock.

    Background because a tool run can last tens of seconds on a slow sandbox, and a provider's
    gateway may end a synchronous call that waits that long (common methodology, "Long
    Commands"). A failing tool is our defect, not the provider's.
    """
    result = ctx.background(command, timeout=timeout, workdir=WORKDIR, check_gate=check_gate)
    if result.exit_code == 127:
        raise BenchmarkError(f"{what}: the tool is not installed in the sandbox image")
    if result.exit_code != 0:
        error = result.stderr.decode(errors="replace").strip()[-400:]
        raise BenchmarkError(f"{what} exited {result.exit_code}: {error}")
    return result.stdout.decode(errors="replace")


def record_flags(ctx: TrialContext, flags: dict[str, bool]) -> None:
    for name in FLAGS:
        if name in flags:
            ctx.record(
                name,
                1.0 if flags[name] else 0.0,
                unit="flag",
                clock=Clock.GUEST,
                gate=ClockGate.PASS,
            )


# -- pre-test checks -----------------------------------------------------------------------------


def require_free_space(ctx: TrialContext, needed_mib: int) -> None:
    result = ctx.exec(["/bin/df", "-Pk", WORKDIR], timeout=30)
    free_kib = parse_df_available_kib(result.stdout.decode(errors="replace"))
    if result.exit_code != 0 or free_kib is None:
        raise ProviderFailure(f"cannot read the free space of {WORKDIR}")
    if free_kib < needed_mib * 1024:
        raise Missed(f"{WORKDIR} has {free_kib // 1024} MiB free; this test needs {needed_mib} MiB")


def require_direct_io(ctx: TrialContext) -> None:
    probe = f"{WORKDIR}/.boxbench-odirect"
    command = f"dd if=/dev/zero of={probe} bs=4096 count=1 oflag=direct 2>&1; rc=$?; rm -f {probe}"
    result = ctx.exec(["/bin/bash", "-c", command + "; exit $rc"], timeout=60)
    if result.exit_code != 0:
        detail = result.stdout.decode(errors="replace").strip()[-200:]
        raise Missed(f"{WORKDIR} rejects O_DIRECT: {detail}")


def parse_df_available_kib(text: str) -> int | None:
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    fields = lines[-1].split()
    try:
        return int(fields[3])
    except (IndexError, ValueError):
        return None


# -- sysbench ------------------------------------------------------------------------------------


def parse_sysbench_cpu(text: str) -> tuple[float, list[float]]:
    """(events per second, the per-interval eps readings of --report-interval)."""
    total = re.search(r"events per second:\s*([\d.]+)", text)
    if total is None:
        raise BenchmarkError(f"sysbench cpu printed no 'events per second': {text[-300:]!r}")
    intervals = [float(v) for v in re.findall(r"\]\s*thds:\s*\d+\s+eps:\s*([\d.]+)", text)]
    return float(total.group(1)), intervals


def parse_sysbench_memory(text: str) -> float:
    match = re.search(r"MiB transferred \(([\d.]+) MiB/sec\)", text)
    if match is None:
        raise BenchmarkError(f"sysbench memory printed no MiB/sec figure: {text[-300:]!r}")
    return float(match.group(1))


def throttled(intervals: list[float]) -> bool:
    """The last third of the run is markedly slower than the first third (CPU throttling)."""
    if len(intervals) < 6:
        return False
    third = len(intervals) // 3
    first, last = statistics.fmean(intervals[:third]), statistics.fmean(intervals[-third:])
    return first > 0 and (first - last) / first >= THROTTLE_DROP


def cgroup_throttle_probe() -> str:
    """Bash that prints the cgroup's throttled-period count (0 when there is no cpu.stat)."""
    return (
        "awk '/^nr_throttled/ {print $2; found=1} END {if (!found) print 0}' "
        "/sys/fs/cgroup/cpu.stat 2> /dev/null || echo 0"
    )


# -- fio -----------------------------------------------------------------------------------------


def fio_command(
    name: str, rw: str, bs: str, size_mib: int, runtime_s: int, time_based: bool = True
) -> str:
    """One fio job on the test file. Time-based jobs run `runtime_s`; the others stop after
    `size_mib` or at `runtime_s`, whichever comes first, so a slow disk cannot stretch a trial."""
    parts = [
        "fio",
        f"--name={name}",
        f"--filename={FIO_FILE}",
        f"--rw={rw}",
        f"--bs={bs}",
        f"--size={size_mib}M",
        "--direct=1",
        "--ioengine=psync",
        "--iodepth=1",
        "--numjobs=1",
        "--invalidate=1",
        "--output-format=json",
    ]
    parts.append(f"--runtime={runtime_s}")
    if time_based:
        parts.append("--time_based")
    if rw in ("write", "randwrite"):
        parts.append("--end_fsync=1")
    return " ".join(parts)


def parse_fio(text: str, direction: str) -> dict[str, float]:
    """iops, bandwidth (MiB/s), mean completion latency (us) and CPU use (%) of the first job."""
    start = text.find("{")
    try:
        job = json.loads(text[start:])["jobs"][0]
        side = job[direction]
        return {
            "iops": float(side["iops"]),
            "mib_s": float(side["bw_bytes"]) / (1024 * 1024),
            "clat_us": float(side["clat_ns"]["mean"]) / 1000,
            "cpu_percent": float(job["usr_cpu"]) + float(job["sys_cpu"]),
        }
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise BenchmarkError(f"cannot read fio's JSON output ({exc}): {text[-300:]!r}") from None


def disk_flags(figures: dict[str, float], ceiling_key: str, value: float, reads: bool) -> dict:
    flags = {
        "flag_throughput_ceiling": value > CEILINGS[ceiling_key],
        "flag_cpu_bound": figures["cpu_percent"] >= CPU_BOUND_PERCENT,
    }
    if reads:
        flags["flag_cached_direct_read"] = figures["clat_us"] < CACHED_READ_LATENCY_US
    return flags


def layout_file(ctx: TrialContext, size_mib: int) -> None:
    """Untimed: write the test file once, so reads and rewrites hit allocated blocks.

    A data load, so it runs in the background like a tool run; nothing is measured in it, so a
    clock step here fails nothing.
    """
    command = f"dd if=/dev/urandom of={FIO_FILE} bs=1M count={size_mib} conv=fsync status=none"
    result = ctx.background(command, timeout=LAYOUT_LIMIT_S, workdir=WORKDIR, check_gate=False)
    if result.exit_code != 0:
        error = result.stderr.decode(errors="replace").strip()[-200:]
        raise ProviderFailure(f"cannot lay out the {size_mib} MiB test file in {WORKDIR}: {error}")


def run_cpu(ctx: TrialContext, threads: str, seconds: int) -> None:
    """sysbench cpu between two reads of the cgroup's throttle counter; records eps and flags."""
    command = (
        f"t0=$({cgroup_throttle_probe()}); "
        f"sysbench cpu --threads={threads} --time={seconds} --cpu-max-prime={CPU_MAX_PRIME} "
        "--report-interval=1 run && "
        f'echo "nr_throttled_delta $(( $({cgroup_throttle_probe()}) - t0 ))"'
    )
    text = run_tool(ctx, command, seconds + TOOL_MARGIN_S, "sysbench cpu")
    eps, intervals = parse_sysbench_cpu(text)
    delta = re.search(r"nr_throttled_delta (-?\d+)", text)
    cgroup_throttled = delta is not None and int(delta.group(1)) > 0
    ctx.record("cpu_events_per_s", eps, unit="events/s", clock=Clock.GUEST, gate=ClockGate.PASS)
    record_flags(ctx, {"flag_throttled": cgroup_throttled or throttled(intervals)})
