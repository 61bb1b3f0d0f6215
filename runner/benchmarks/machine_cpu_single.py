"""CPU, single core: sysbench cpu with one thread, events per second (higher is better)."""

from runner.benchmarks import machine_common as mc
from runner.benchmarks.base import TrialContext, UnitDefinition

SECONDS = 10
THREADS = 1

DEFINITION = mc.machine_definition(
    "cpu-single",
    "CPU (single core)",
    f"sysbench cpu, {THREADS} thread, {SECONDS} s, primes up to 20000: events per second.",
    metric="cpu_events_per_s",
    unit="events/s",
    direction="higher",
)


def units() -> list[UnitDefinition]:
    return [UnitDefinition("sysbench-cpu", "sysbench cpu", definition={"seconds": SECONDS})]


def run(ctx: TrialContext) -> None:
    mc.run_cpu(ctx, threads=str(THREADS), seconds=SECONDS)
