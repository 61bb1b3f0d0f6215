"""Memory bandwidth: sysbench memory, 1 MiB blocks written by one thread, MiB/s."""

from runner.benchmarks import machine_common as mc
from runner.benchmarks.base import TrialContext, UnitDefinition

TOTAL = "32G"

DEFINITION = mc.machine_definition(
    "memory-bandwidth",
    "Memory bandwidth",
    f"sysbench memory: {TOTAL} written in 1 MiB blocks by one thread, MiB/s.",
    metric="memory_mib_s",
    unit="MiB/s",
    direction="higher",
)


def units() -> list[UnitDefinition]:
    return [UnitDefinition("sysbench-memory", "sysbench memory", definition={"total": TOTAL})]


def run(ctx: TrialContext) -> None:
    command = (
        "sysbench memory --threads=1 --memory-block-size=1M "
        f"--memory-total-size={TOTAL} --memory-oper=write --time=60 run"
    )
    value = mc.parse_sysbench_memory(mc.run_tool(ctx, command, 120, "sysbench memory"))
    ctx.record("memory_mib_s", value, unit="MiB/s", clock="guest", gate="pass")
    mc.record_flags(ctx, {"flag_throughput_ceiling": value > mc.CEILINGS["memory_mib_s"]})
