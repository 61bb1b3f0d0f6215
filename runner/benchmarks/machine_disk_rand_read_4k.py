"""Disk 4 KiB random read: fio randread, O_DIRECT, queue depth 1, IOPS."""

from runner.benchmarks import machine_common as mc
from runner.benchmarks.base import TrialContext, UnitDefinition

SIZE_MIB, SECONDS = 256, 5
PARAMETERS = {"rw": "randread", "bs": "4k", "iodepth": 1, "size_mib": SIZE_MIB, "seconds": SECONDS}

DEFINITION = mc.machine_definition(
    "disk-rand-read-4k",
    "Disk random read 4 KiB",
    f"fio randread, 4 KiB blocks, direct=1, iodepth 1, {SIZE_MIB} MiB file, {SECONDS} s: IOPS.",
    version="2",
    metric="rand_read_iops",
    unit="IOPS",
    direction="higher",
)


def units() -> list[UnitDefinition]:
    return [UnitDefinition("fio-randread-4k", "fio 4 KiB random read", definition=PARAMETERS)]


def run(ctx: TrialContext) -> None:
    mc.require_free_space(ctx, SIZE_MIB * 2)
    mc.require_direct_io(ctx)
    mc.layout_file(ctx, SIZE_MIB)
    command = mc.fio_command("randread", "randread", "4k", SIZE_MIB, SECONDS)
    figures = mc.parse_fio(mc.run_tool(ctx, command, SECONDS + mc.TOOL_MARGIN_S, "fio"), "read")
    ctx.record("rand_read_iops", figures["iops"], unit="IOPS", clock="guest", gate="pass")
    ctx.record("rand_read_clat_us", figures["clat_us"], unit="us", clock="guest", gate="pass")
    mc.record_flags(ctx, mc.disk_flags(figures, "rand_iops", figures["iops"], reads=True))
