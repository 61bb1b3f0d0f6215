"""Disk sequential throughput: fio 1 MiB sequential writes then reads with O_DIRECT, MiB/s.

The main metric is the write figure; the read figure is kept beside it.
"""

from runner.benchmarks import machine_common as mc
from runner.benchmarks.base import TrialContext, UnitDefinition

SIZE_MIB = 512

DEFINITION = mc.machine_definition(
    "disk-seq",
    "Disk sequential throughput",
    f"fio, {SIZE_MIB} MiB file in /app, 1 MiB blocks, direct=1, write then read: MiB/s.",
    metric="disk_seq_write_mib_s",
    unit="MiB/s",
    direction="higher",
)


def units() -> list[UnitDefinition]:
    return [UnitDefinition("fio-seq-1m", "fio 1 MiB sequential", definition={"mib": SIZE_MIB})]


def run(ctx: TrialContext) -> None:
    mc.require_free_space(ctx, SIZE_MIB * 2)
    mc.require_direct_io(ctx)
    write = mc.parse_fio(
        mc.run_tool(ctx, mc.fio_command("seqwrite", "write", "1M", SIZE_MIB, None), 240, "fio"),
        "write",
    )
    read = mc.parse_fio(
        mc.run_tool(ctx, mc.fio_command("seqread", "read", "1M", SIZE_MIB, None), 240, "fio"),
        "read",
    )
    ctx.record("disk_seq_write_mib_s", write["mib_s"], unit="MiB/s", clock="guest", gate="pass")
    ctx.record("disk_seq_read_mib_s", read["mib_s"], unit="MiB/s", clock="guest", gate="pass")
    flags = mc.disk_flags(read, "disk_seq_mib_s", max(write["mib_s"], read["mib_s"]), reads=True)
    write_cpu_bound = write["cpu_percent"] >= mc.CPU_BOUND_PERCENT
    flags["flag_cpu_bound"] = flags["flag_cpu_bound"] or write_cpu_bound
    mc.record_flags(ctx, flags)
