"""CPU, single core: sysbench cpu with one thread, events per second (higher is better)."""

from runner.benchmarks import machine_common as mc
from runner.benchmarks.base import TrialContext, UnitDefinition

# The throttling flag compares the first and last third of at least six 1 s report intervals;
# sysbench sometimes stops before printing the last one, so the run lasts one second more.
SECONDS = 7
THREADS = 1
PARAMETERS = {"threads": THREADS, "seconds": SECONDS, "cpu_max_prime": mc.CPU_MAX_PRIME}

DEFINITION = mc.machine_definition(
    "cpu-single",
    "CPU (single core)",
    f"sysbench cpu, {THREADS} thread, {SECONDS} s, primes up to {mc.CPU_MAX_PRIME}: "
    "events per second.",
    version="2",
    metric="cpu_events_per_s",
    unit="events/s",
    direction="higher",
)


def units() -> list[UnitDefinition]:
    return [UnitDefinition("sysbench-cpu", "sysbench cpu", definition=PARAMETERS)]


def run(ctx: TrialContext) -> None:
    mc.run_cpu(ctx, threads=str(THREADS), seconds=SECONDS)
