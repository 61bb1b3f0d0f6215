"""Disk 4 KiB random read and write: fio, O_DIRECT, queue depth 1, IOPS (higher is better).

Both benchmarks are built from one definition and differ only in their side: randread, or
randwrite with an fsync at the end. The test file is laid out untimed first, so reads and
rewrites hit allocated blocks.
"""

from runner.benchmarks import machine_common as mc
from runner.benchmarks.base import TrialContext, UnitDefinition
from runner.outcomes import Clock, ClockGate, Direction


class RandomIoBenchmark:
    SIZE_MIB, SECONDS = 256, 5

    def __init__(self, side: str):
        """`side`: "read" or "write"."""
        self.side = side
        self.rw = f"rand{side}"
        self.DEFINITION = mc.machine_definition(
            f"disk-rand-{side}-4k",
            f"Disk random {side} 4 KiB",
            f"fio {self.rw}, 4 KiB blocks, direct=1, iodepth 1, {self.SIZE_MIB} MiB file, "
            f"{self.SECONDS} s: IOPS.",
            version="2",
            metric=f"rand_{side}_iops",
            unit="IOPS",
            direction=Direction.HIGHER,
        )

    def units(self) -> list[UnitDefinition]:
        parameters = {
            "rw": self.rw,
            "bs": "4k",
            "iodepth": 1,
            "size_mib": self.SIZE_MIB,
            "seconds": self.SECONDS,
        }
        title = f"fio 4 KiB random {self.side}"
        return [UnitDefinition(f"fio-{self.rw}-4k", title, definition=parameters)]

    def run(self, ctx: TrialContext) -> None:
        mc.require_free_space(ctx, self.SIZE_MIB * 2)
        mc.require_direct_io(ctx)
        mc.layout_file(ctx, self.SIZE_MIB)
        command = mc.fio_command(self.rw, self.rw, "4k", self.SIZE_MIB, self.SECONDS)
        text = mc.run_tool(ctx, command, self.SECONDS + mc.TOOL_MARGIN_S, "fio")
        figures = mc.parse_fio(text, self.side)
        iops, clat = f"rand_{self.side}_iops", f"rand_{self.side}_clat_us"
        ctx.record(iops, figures["iops"], unit="IOPS", clock=Clock.GUEST, gate=ClockGate.PASS)
        ctx.record(clat, figures["clat_us"], unit="us", clock=Clock.GUEST, gate=ClockGate.PASS)
        reads = self.side == "read"
        mc.record_flags(ctx, mc.disk_flags(figures, "rand_iops", figures["iops"], reads=reads))


READ = RandomIoBenchmark("read")
WRITE = RandomIoBenchmark("write")
