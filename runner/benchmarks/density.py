"""Density: idle sandboxes created one after another until the provider refuses or the declared
cap (BOXBENCH_DENSITY_CAP) is reached, then every one destroyed and confirmed gone.

The control-plane document's capacity validation: "create sandboxes until it refuses, record the
limit and the error it returns". Each create is followed by its readiness check, so only sandboxes
that answer are counted, and is recorded like a burst's request (`requests`: sent, created, ready,
outcome, cause), so the refusal's class (`rate_limited` for a 429 or quota answer, or a failure)
and message are in the raw data. Where the sandboxes run on the job host itself (local, docker,
OpenSandbox) the job host's available memory is read before the first create and once the last
sandbox is idle: the difference over the count is the memory per idle sandbox (other work on the
job host moves it too, so it is a figure of a quiet host). A provider's refusal is the
measurement, not its failure; a refusal before any sandbox answered is.
"""

from __future__ import annotations

import time
from dataclasses import asdict

import psutil

from runner.benchmarks.base import BenchmarkDefinition, ProviderFailure, TrialContext
from runner.benchmarks.base import UnitDefinition as Unit
from runner.benchmarks.burst import OK, Request, create_and_wait
from runner.outcomes import Clock, Direction, Section

DEFINITION = BenchmarkDefinition(
    slug="density",
    title="Density",
    section=Section.SANDBOX_OPERATIONS,
    description=(
        "Idle sandboxes created one after another until the provider refuses or the cap is "
        "reached: how many answer at once, and the refusal's class and message."
    ),
    metric="sandboxes_reached",
    unit="count",
    direction=Direction.HIGHER,
    clock=Clock.JOB_HOST,
    version="1",
    required_capabilities=("exec",),
    # A capacity, not a speed: recorded beside the published limit, never scored.
    charted=False,
    trials_per_unit=3,
    ranking_floor=3,
    own_sandbox=False,
    timed_readiness=True,
    interacting=True,
    procedure_timeout_s=1800,
    lifetime_s=2400,
)


def units() -> list[Unit]:
    from django.conf import settings  # the cap is the job host's setting, read when asked

    cap = settings.DENSITY_CAP
    return [Unit("default", f"Up to {cap} idle sandboxes", definition={"cap": cap})]


def run(ctx: TrialContext) -> None:
    cap = ctx.unit.definition["cap"]
    on_host = ctx.provider.declaration.shares_job_host
    before = psutil.virtual_memory().available if on_host else None
    start = time.monotonic()
    records: list[Request] = []
    # Creates keep to the declared creation rate (the spacing rule): a refusal then says the
    # account is full, not that it was asked too fast.
    rate = ctx.provider.declaration.create_rate_per_s
    while len(records) < cap and not (records and records[-1].outcome != OK):
        if rate:
            time.sleep(max(0.0, start + len(records) / rate - time.monotonic()))
        records.append(_idle_sandbox(ctx, len(records), start))
    reached = sum(r.outcome == OK for r in records)
    after = psutil.virtual_memory().available if on_host else None
    ctx.requests([asdict(r) for r in records])
    ctx.record("sandboxes_reached", reached, unit="count", clock=Clock.JOB_HOST)
    refused = records[-1] if records[-1].outcome != OK else None
    ctx.record("refused", 1 if refused else 0, unit="count", clock=Clock.JOB_HOST)
    if before is not None and after is not None and reached:
        per_sandbox = max(0.0, (before - after) / reached / 2**20)
        ctx.record("memory_per_sandbox_mib", per_sandbox, unit="MiB", clock=Clock.JOB_HOST)
    if refused and not reached:
        raise ProviderFailure(f"the first create was refused: {refused.outcome}: {refused.cause}")


def _idle_sandbox(ctx: TrialContext, i: int, start: float) -> Request:
    """One more idle sandbox, created and checked ready; its record says how it went."""

    def ms(instant: float) -> float:
        return round((instant - start) * 1000, 3)

    request = Request(planned_ms=ms(time.monotonic()))
    create_and_wait(ctx, f"create_{i + 1}", request, ms)
    return request
