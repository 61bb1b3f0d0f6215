"""CPU, single core and all cores: sysbench cpu, events per second (higher is better).

Both benchmarks are built from one definition and differ only in their thread count: one thread
(cpu-single), or one per CPU the sandbox reports with nproc (cpu-all). A sandbox that reports the
host's CPU count starts more threads than it was given; the result counts that as the provider's
behaviour (deepswe.txt, "Scope Limits and Caveats").
"""

from runner.benchmarks import machine_common as mc
from runner.benchmarks.base import TrialContext, UnitDefinition
from runner.outcomes import Direction


class CpuBenchmark:
    # The throttling flag compares the first and last third of at least six 1 s report intervals;
    # sysbench sometimes stops before printing the last one, so the run lasts one second more.
    SECONDS = 7

    def __init__(self, slug: str, title: str, threads: int | str, threads_text: str):
        """`threads`: a count, or "nproc" for one thread per CPU the sandbox reports."""
        self.threads = threads
        self.DEFINITION = mc.machine_definition(
            slug,
            title,
            f"sysbench cpu, {threads_text}, {self.SECONDS} s, primes up to {mc.CPU_MAX_PRIME}: "
            "events per second.",
            version="2",
            metric="cpu_events_per_s",
            unit="events/s",
            direction=Direction.HIGHER,
        )

    def units(self) -> list[UnitDefinition]:
        parameters = {
            "threads": self.threads,
            "seconds": self.SECONDS,
            "cpu_max_prime": mc.CPU_MAX_PRIME,
        }
        return [UnitDefinition("sysbench-cpu", "sysbench cpu", definition=parameters)]

    def run(self, ctx: TrialContext) -> None:
        threads = "$(nproc)" if self.threads == "nproc" else str(self.threads)
        mc.run_cpu(ctx, threads=threads, seconds=self.SECONDS)


SINGLE = CpuBenchmark("cpu-single", "CPU (single core)", 1, "1 thread")
ALL = CpuBenchmark("cpu-all", "CPU (all cores)", "nproc", "one thread per reported CPU")
