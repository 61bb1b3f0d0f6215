"""Sequential TTI: time to interactive, from create's adapter entry to the first answered command.

No untimed readiness check runs first: the first timed `true` is sent as soon as create returns
and retried with the readiness backoff until the sandbox answers. Stages split the total into
create and the wait for the first answer.
"""

import time

from runner.benchmarks.base import BenchmarkDefinition, TrialContext, UnitDefinition
from runner.outcomes import Clock, Direction, MeasurementKind, Section

DEFINITION = BenchmarkDefinition(
    slug="sequential-tti",
    title="Sequential TTI",
    section=Section.SANDBOX_OPERATIONS,
    description="Create a sandbox and send the first command at once: time until it answers.",
    metric="tti_ms",
    unit="ms",
    direction=Direction.LOWER,
    clock=Clock.JOB_HOST,
    required_capabilities=("exec",),
    stage_names=("create", "first_command"),
    steps_include_create_or_build=True,
    timed_readiness=True,
    procedure_timeout_s=60,
    lifetime_s=300,
)


def units() -> list[UnitDefinition]:
    return [UnitDefinition("default", "Default sandbox")]


def run(ctx: TrialContext) -> None:
    ctx.check_readiness(ctx.sandbox)
    ready = time.monotonic()
    # The lifecycle stamps its own create before any procedure runs.
    assert ctx.create_started is not None and ctx.create_returned is not None
    ctx.record("tti_ms", (ready - ctx.create_started) * 1000, clock=Clock.JOB_HOST)
    ctx.record("create", ctx.create_ms, kind=MeasurementKind.STAGE, clock=Clock.JOB_HOST)
    ctx.record(
        "first_command",
        (ready - ctx.create_returned) * 1000,
        kind=MeasurementKind.STAGE,
        clock=Clock.JOB_HOST,
    )
