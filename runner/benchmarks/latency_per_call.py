"""Latency per Call: the transport overhead of many `true` calls in one sandbox.

Each call runs inside the guest clock wrapper; its latency is total time (job host) minus runtime
(guest clock). The trial records every call as `latency_ms.call_NNN` and their lower median as
`latency_ms`. Calls in one sandbox are not independent, so the statistic is pooled_median: the
bootstrap resamples whole trials and pools their calls.
"""

from runner.benchmarks.base import (
    BenchmarkDefinition,
    ProviderFailure,
    TrialContext,
    UnitDefinition,
)
from runner.outcomes import Clock, ClockGate, Direction, Section

CALLS = 50

# The unit's title, as a reader reads it: version 1 stored the command alone ("`true`"), which
# read as a unit named "true". A stored definition never changes, so the title is version 2's;
# pages render version 1's stored title with these words too (leaderboard.boards.UNIT_TITLES).
UNIT_TITLE = f"{CALLS} sequential calls of `true`"

DEFINITION = BenchmarkDefinition(
    slug="latency-per-call",
    version="2",
    title="Latency per Call",
    section=Section.SANDBOX_OPERATIONS,
    description=f"{CALLS} sequential `true` calls in one sandbox: total time minus guest runtime.",
    metric="latency_ms",
    unit="ms",
    direction=Direction.LOWER,
    statistic="pooled_median",
    clock=Clock.JOB_HOST,
    required_capabilities=("exec",),
    procedure_timeout_s=300,
    lifetime_s=600,
)


def units() -> list[UnitDefinition]:
    return [UnitDefinition("true", UNIT_TITLE, definition={"calls": CALLS})]


def run(ctx: TrialContext) -> None:
    latencies: list[float] = []
    for call in range(1, CALLS + 1):
        result = ctx.guest("true", timeout=30)
        if result.exit_code != 0:
            # `true` cannot fail in a working shell: the sandbox's shell is broken.
            raise ProviderFailure(f"`true` exited {result.exit_code} on call {call}")
        # guest() raises on a failed clock gate, so every call that returns has a latency.
        assert result.latency_ms is not None
        latencies.append(result.latency_ms)
        ctx.record(
            f"latency_ms.call_{call:03d}",
            result.latency_ms,
            clock=Clock.JOB_HOST,
            gate=ClockGate.PASS,
        )
    ordered = sorted(latencies)
    ctx.record(
        "latency_ms",
        ordered[(len(ordered) + 1) // 2 - 1],
        clock=Clock.JOB_HOST,
        gate=ClockGate.PASS,
    )
