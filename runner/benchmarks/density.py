"""Density: idle sandboxes created one after another until the provider refuses or the declared
cap (BOXBENCH_DENSITY_CAP) is reached, then every one destroyed and confirmed gone.

The control-plane document's capacity validation: "create sandboxes until it refuses, record the
limit and the error it returns". Each create is followed by its readiness check, so only sandboxes
that answer are counted, and is recorded like a burst's request (`requests`: sent, created, ready,
outcome, cause), so the refusal's class (`rate_limited` for a 429 or quota answer, or a failure)
and message are in the raw data. Where the sandboxes run on the job host itself (local, docker,
OpenSandbox) the memory per idle sandbox is recorded once the last one is idle: the mean of what
each sandbox's cgroup holds where the adapter reads it (`Provider.memory_in_use`: local, docker),
else the drop of the job host's available memory since the first create over the count. Version 2:
version 1 took the drop everywhere, which other work on the job host moves by more than an idle
sandbox holds (it read 0 MiB for docker on a quiet host). A provider's refusal is the
measurement, not its failure; a refusal before any sandbox answered is.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

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
    version="2",
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
    idle = []
    while len(records) < cap and not (records and records[-1].outcome != OK):
        if rate:
            time.sleep(max(0.0, start + len(records) / rate - time.monotonic()))
        request, sandbox = _idle_sandbox(ctx, len(records), start)
        records.append(request)
        if request.outcome == OK:
            idle.append(sandbox)
    reached = sum(r.outcome == OK for r in records)
    after = psutil.virtual_memory().available if on_host else None
    held = [ctx.provider.memory_in_use(sandbox) for sandbox in idle] if on_host else []
    ctx.requests([asdict(r) for r in records])
    ctx.record("sandboxes_reached", reached, unit="count", clock=Clock.JOB_HOST)
    refused = records[-1] if records[-1].outcome != OK else None
    ctx.record("refused", 1 if refused else 0, unit="count", clock=Clock.JOB_HOST)
    own = [n for n in held if n is not None]
    if own and len(own) == len(held):
        per_sandbox = sum(own) / len(own) / 2**20
        ctx.record("memory_per_sandbox_mib", per_sandbox, unit="MiB", clock=Clock.JOB_HOST)
    elif before is not None and after is not None and reached:
        per_sandbox = max(0.0, (before - after) / reached / 2**20)
        ctx.record("memory_per_sandbox_mib", per_sandbox, unit="MiB", clock=Clock.JOB_HOST)
    if refused and not reached:
        raise ProviderFailure(f"the first create was refused: {refused.outcome}: {refused.cause}")


def _idle_sandbox(ctx: TrialContext, i: int, start: float) -> tuple[Request, Any]:
    """One more idle sandbox, created and checked ready: its record, which says how it went,
    and the sandbox (None if create failed)."""

    def ms(instant: float) -> float:
        return round((instant - start) * 1000, 3)

    request = Request(planned_ms=ms(time.monotonic()))
    sandbox = create_and_wait(ctx, f"create_{i + 1}", request, ms)
    return request, sandbox
