"""Destroy: the time for the provider's destroy call to return, from adapter entry.

Recorded, not charted. Cleanup still confirms the sandbox gone; that wait is not in the metric.
"""

from runner.benchmarks.base import BenchmarkDefinition, TrialContext, UnitDefinition
from runner.outcomes import Clock, Direction, Section

DEFINITION = BenchmarkDefinition(
    slug="destroy",
    title="Destroy",
    section=Section.SANDBOX_OPERATIONS,
    description="Time for the provider's destroy call to return.",
    metric="destroy_ms",
    unit="ms",
    direction=Direction.LOWER,
    clock=Clock.JOB_HOST,
    required_capabilities=("exec",),
    charted=False,
    procedure_timeout_s=120,
    lifetime_s=300,
)


def units() -> list[UnitDefinition]:
    return [UnitDefinition("default", "Default sandbox")]


def run(ctx: TrialContext) -> None:
    ctx.destroy_sandbox(name="destroy_ms")
