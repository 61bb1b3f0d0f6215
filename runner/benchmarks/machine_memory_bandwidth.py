"""Memory bandwidth: sysbench memory, 1 MiB blocks written by one thread for a fixed time, MiB/s."""

from runner.benchmarks import machine_common as mc
from runner.benchmarks.base import TrialContext
from runner.outcomes import Clock, ClockGate

SECONDS = 5
# So large that the time, not the amount, ends the run on any machine (2 TB in 5 s is 400 GB/s).
TOTAL = "1024T"
BLOCK = "1M"
PARAMETERS = {"threads": 1, "block": BLOCK, "seconds": SECONDS, "total": TOTAL, "oper": "write"}

DEFINITION = mc.throughput_definition(
    "memory-bandwidth",
    "Memory bandwidth",
    f"sysbench memory: {BLOCK} blocks written by one thread for {SECONDS} s, MiB/s.",
    version="2",
    metric="memory_mib_s",
)
units = mc.one_unit("sysbench-memory", "sysbench memory", PARAMETERS)


def run(ctx: TrialContext) -> None:
    command = (
        f"sysbench memory --threads=1 --memory-block-size={BLOCK} "
        f"--memory-total-size={TOTAL} --memory-oper=write --time={SECONDS} run"
    )
    text = mc.run_tool(ctx, command, SECONDS + mc.TOOL_MARGIN_S, "sysbench memory")
    value = mc.parse_sysbench_memory(text)
    ctx.record("memory_mib_s", value, unit="MiB/s", clock=Clock.GUEST, gate=ClockGate.PASS)
    mc.record_flags(ctx, {"flag_throughput_ceiling": value > mc.CEILINGS["memory_mib_s"]})
