"""CPU, all cores: sysbench cpu with one thread per CPU the sandbox reports (nproc).

A sandbox that reports the host's CPU count starts more threads than it was given; the result
counts that as the provider's behaviour (deepswe.txt, "Scope Limits and Caveats").
"""

from runner.benchmarks import machine_common as mc
from runner.benchmarks.base import TrialContext, UnitDefinition

SECONDS = 7  # as cpu-single: at least six report intervals for the throttling flag
PARAMETERS = {"threads": "nproc", "seconds": SECONDS, "cpu_max_prime": mc.CPU_MAX_PRIME}

DEFINITION = mc.machine_definition(
    "cpu-all",
    "CPU (all cores)",
    f"sysbench cpu, one thread per reported CPU, {SECONDS} s, primes up to {mc.CPU_MAX_PRIME}: "
    "events per second.",
    version="2",
    metric="cpu_events_per_s",
    unit="events/s",
    direction="higher",
)


def units() -> list[UnitDefinition]:
    return [UnitDefinition("sysbench-cpu", "sysbench cpu", definition=PARAMETERS)]


def run(ctx: TrialContext) -> None:
    mc.run_cpu(ctx, threads="$(nproc)", seconds=SECONDS)
