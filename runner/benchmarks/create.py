"""Create: the time from adapter entry until create returns, on the job host's clock.

The lifecycle times create for every trial; this procedure records that time as the metric.
The sandbox then gets the untimed readiness check like any other trial. Version 2: the create
starts from the pinned base plus a layer unique to the trial (runner/layers.py), so no provider
can answer it from an image cache; version 1 created from the pinned base itself. Version 3: the
layer is built on every provider that declares `unique_layer`, the cloud ones included, through
each one's own mechanism; version 2 built it on docker only.
"""

from runner.benchmarks.base import BenchmarkDefinition, TrialContext, UnitDefinition
from runner.outcomes import Clock, Direction, Section

DEFINITION = BenchmarkDefinition(
    slug="create",
    title="Create",
    section=Section.SANDBOX_OPERATIONS,
    description=(
        "Time for the provider's create call to return a sandbox, from the pinned base image "
        "plus a layer unique to the trial, built untimed beforehand through the provider's own "
        "image, template or snapshot mechanism. A provider with none reads Not Supported."
    ),
    metric="create_ms",
    unit="ms",
    direction=Direction.LOWER,
    clock=Clock.JOB_HOST,
    version="3",
    required_capabilities=("exec", "unique_layer"),
    steps_include_create_or_build=True,
    unique_layer=True,
    procedure_timeout_s=60,
    lifetime_s=300,
)


def units() -> list[UnitDefinition]:
    return [UnitDefinition("default", "Default sandbox")]


def run(ctx: TrialContext) -> None:
    ctx.record("create_ms", ctx.create_ms, clock=Clock.JOB_HOST)
