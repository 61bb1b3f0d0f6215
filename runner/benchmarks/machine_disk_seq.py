"""Disk sequential throughput: fio 1 MiB sequential writes then reads with O_DIRECT, MiB/s.

The main metric is the write figure; the read figure is kept beside it. Both jobs run in one
background command; each stops after the file's size or its time cap, whichever comes first.
"""

from runner.benchmarks import machine_common as mc
from runner.benchmarks.base import BenchmarkError, TrialContext
from runner.outcomes import Clock, ClockGate

SIZE_MIB = 256
CAP_SECONDS = 10  # per job: only a disk slower than 25 MiB/s reaches it
PARAMETERS = {"bs": "1M", "size_mib": SIZE_MIB, "cap_seconds": CAP_SECONDS, "jobs": "write,read"}
# Printed between the two jobs' JSON reports.
BETWEEN = "__BOXBENCH_FIO_READ__"

DEFINITION = mc.throughput_definition(
    "disk-seq",
    "Disk sequential throughput",
    f"fio, {SIZE_MIB} MiB file in /app, 1 MiB blocks, direct=1, write then read, each capped "
    f"at {CAP_SECONDS} s: MiB/s.",
    version="2",
    metric="disk_seq_write_mib_s",
)
units = mc.one_unit("fio-seq-1m", "fio 1 MiB sequential", PARAMETERS)


def run(ctx: TrialContext) -> None:
    mc.require_free_space(ctx, SIZE_MIB * 2)
    mc.require_direct_io(ctx)
    write_job = mc.fio_command("seqwrite", "write", "1M", SIZE_MIB, CAP_SECONDS, time_based=False)
    read_job = mc.fio_command("seqread", "read", "1M", SIZE_MIB, CAP_SECONDS, time_based=False)
    command = f"{write_job} && echo {BETWEEN} && {read_job}"
    text = mc.run_tool(ctx, command, 2 * CAP_SECONDS + mc.TOOL_MARGIN_S, "fio")
    write_text, read_text = split_reports(text)
    write, read = mc.parse_fio(write_text, "write"), mc.parse_fio(read_text, "read")
    ctx.record(
        "disk_seq_write_mib_s", write["mib_s"], unit="MiB/s", clock=Clock.GUEST, gate=ClockGate.PASS
    )
    ctx.record(
        "disk_seq_read_mib_s", read["mib_s"], unit="MiB/s", clock=Clock.GUEST, gate=ClockGate.PASS
    )
    flags = mc.disk_flags(read, "disk_seq_mib_s", max(write["mib_s"], read["mib_s"]), reads=True)
    write_cpu_bound = write["cpu_percent"] >= mc.CPU_BOUND_PERCENT
    flags["flag_cpu_bound"] = flags["flag_cpu_bound"] or write_cpu_bound
    mc.record_flags(ctx, flags)


def split_reports(text: str) -> tuple[str, str]:
    """The write job's report and the read job's, split at the line printed between them."""
    write_text, between, read_text = text.partition(f"\n{BETWEEN}\n")
    if not between:
        raise BenchmarkError(f"fio's two reports are not separated by {BETWEEN}: {text[-300:]!r}")
    return write_text, read_text
