"""Create: the time from adapter entry until create returns, on the job host's clock.

The lifecycle times create for every trial; this procedure records that time as the metric.
The sandbox then gets the untimed readiness check like any other trial.
"""

from runner.benchmarks.base import BenchmarkDefinition, TrialContext, UnitDefinition

DEFINITION = BenchmarkDefinition(
    slug="create",
    title="Create",
    section="sandbox_operations",
    description="Time for the provider's create call to return a sandbox.",
    metric="create_ms",
    unit="ms",
    direction="lower",
    clock="job_host",
    required_capabilities=("exec",),
    steps_include_create_or_build=True,
    procedure_timeout_s=60,
    lifetime_s=300,
)


def units() -> list[UnitDefinition]:
    return [UnitDefinition("default", "Default sandbox")]


def run(ctx: TrialContext) -> None:
    ctx.record("create_ms", ctx.create_ms, clock="job_host")
