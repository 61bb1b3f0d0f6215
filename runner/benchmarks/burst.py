"""Burst: N creates sent on an open loop, each followed by timed readiness, then all N gone.

One trial is one burst; its unit is the tier N (BOXBENCH_BURST_TIERS). Every request has a
planned send: all at the burst's start, or one every 1/rate seconds where the provider declares
a creation rate (stats.burst.planned_offsets_ms). The job host must not be the bottleneck, and
shows it is not: each request runs on a thread started before the burst begins (so no send waits
on a thread being born), and its scheduling delay (sent minus planned) is recorded; a burst whose
largest delay exceeds the unit's declared bound is the benchmark's error (the job host's), never
the provider's. Each request is recorded in submission order (`planned_ms`, `sent_ms`,
`created_ms`, `ready_ms`, `outcome`, `cause`) and goes to the raw data.

The N sandboxes of a burst interact, so a failed burst is re-run whole (it is one trial; the
chain's top-ups replace trials, never requests). A request answered `rate_limited` counts apart
from failures (stats.burst); any other failed request fails the burst.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from runner.benchmarks.base import (
    BenchmarkDefinition,
    ProviderFailure,
    TrialContext,
    TrialOutcome,
)
from runner.benchmarks.base import UnitDefinition as Unit
from runner.outcomes import Clock, Direction, RequestOutcome, Section
from runner.readiness import ReadinessFailed
from runner.trial_failures import CreateFailed, JobHostFailure
from stats.burst import burst_figures, planned_offsets_ms

# The tier every eligible provider can run: the operation's scored default configuration.
DEFAULT_TIER = "8"
# The largest scheduling delay a burst may show, in ms: past it the job host, not the provider,
# set the pace. bench/bench_burst.py measures the delay per tier on this machine.
SCHEDULING_BOUND_MS = 250.0
OK, RATE_LIMITED = RequestOutcome.OK, RequestOutcome.RATE_LIMITED
PROVIDER_ERROR, TIMEOUT, STUCK = (
    RequestOutcome.PROVIDER_ERROR,
    RequestOutcome.TIMEOUT,
    RequestOutcome.STUCK,
)
FIGURE_UNITS = {
    "requests": "count",
    "rate_limited": "count",
    "success_share": "share",
    "throughput_per_s": "1/s",
}

DEFINITION = BenchmarkDefinition(
    slug="burst",
    title="Burst",
    section=Section.SANDBOX_OPERATIONS,
    description=(
        "N creates sent at once (or paced by the account's declared creation rate), each "
        "followed by its first command: time until the last sandbox answers."
    ),
    metric="last_ready_ms",
    unit="ms",
    direction=Direction.LOWER,
    clock=Clock.JOB_HOST,
    version="1",
    required_capabilities=("exec",),
    steps_include_create_or_build=True,
    timed_readiness=True,
    own_sandbox=False,
    # Bursts never overlap: two at once would be one larger burst.
    interacting=True,
    procedure_timeout_s=1200,
    lifetime_s=1800,
)


def tiers() -> list[int]:
    from django.conf import settings  # the tiers are the job host's setting, read when asked

    return list(settings.BURST_TIERS)


def units() -> list[Unit]:
    return [
        Unit(
            str(n),
            f"{n} at once",
            definition={"tier": n, "sandboxes": n, "scheduling_bound_ms": SCHEDULING_BOUND_MS},
        )
        for n in tiers()
    ]


def unit_problem(slug: str) -> str:
    """Why a tier that is not among the units cannot be planned."""
    from django.conf import settings

    if not slug.isdigit() or int(slug) < 1:
        return "a tier is a positive whole number of creates"
    if int(slug) > settings.BURST_MAX_TIER:
        return f"above the largest tier, {settings.BURST_MAX_TIER} (BOXBENCH_BURST_MAX_TIER)"
    return "not a configured tier: add it to BOXBENCH_BURST_TIERS"


@dataclass
class Request:
    planned_ms: float
    sent_ms: float | None = None
    created_ms: float | None = None
    ready_ms: float | None = None
    outcome: str = ""  # a RequestOutcome
    cause: str = ""

    def end(self, outcome: str, cause: str = "") -> None:
        if not self.outcome:
            self.outcome, self.cause = outcome, cause[:300]


def run(ctx: TrialContext) -> None:
    tier = ctx.unit.definition["tier"]
    bound = ctx.unit.definition["scheduling_bound_ms"]
    rate = ctx.provider.declaration.create_rate_per_s
    requests = Burst(ctx, planned_offsets_ms(tier, rate)).run()
    records = [asdict(r) for r in requests]
    ctx.requests(records)
    figures = burst_figures(records)
    for name, value in figures.items():
        ctx.record(name, value, unit=FIGURE_UNITS.get(name, "ms"), clock=Clock.JOB_HOST)
    if figures.get("sched_delay_max_ms", 0.0) > bound:
        raise JobHostFailure(
            f"the job host sent a request {figures['sched_delay_max_ms']:.1f} ms after its "
            f"planned time, above the {bound:g} ms bound: the burst measured the job host"
        )
    failed = [(i, r) for i, r in enumerate(requests) if r.outcome not in (OK, RATE_LIMITED)]
    if failed:
        i, first = failed[0]
        raise ProviderFailure(
            f"{len(failed)} of {tier} requests failed; the first, #{i + 1}: "
            f"{first.outcome}: {first.cause}"
        )
    if not any(r.outcome == OK for r in requests):
        raise ProviderFailure(f"all {tier} creates were answered rate_limited")


class Burst:
    """One burst's requests, each on a thread born before the burst starts."""

    # How a request's thread waits for its planned send (a test starves the job host here).
    sleep = staticmethod(time.sleep)

    def __init__(self, ctx: TrialContext, planned_ms: list[float]):
        self.ctx = ctx
        self.requests = [Request(p) for p in planned_ms]
        self.born = threading.Barrier(len(planned_ms) + 1)
        self.settled = [threading.Event() for _ in planned_ms]
        self.teardown = threading.Event()
        self.start = 0.0
        self.crashes: list[BaseException] = []

    def run(self) -> list[Request]:
        threads = [
            threading.Thread(target=self._request, args=(i,), name=f"burst-{i}", daemon=True)
            for i in range(len(self.requests))
        ]
        for thread in threads:
            thread.start()
        # Every thread is waiting at the barrier before the clock starts: none is born late.
        self.start = time.monotonic() + 0.05
        d = self.ctx.definition
        deadline = self.start + self.requests[-1].planned_ms / 1000 + d.create_timeout_s + 30
        self.born.wait()
        for i, settled in enumerate(self.settled):
            if not settled.wait(max(0.0, deadline - time.monotonic())):
                self.requests[i].end(TIMEOUT, "no create answer or readiness before the limit")
        self.teardown.set()
        for thread in threads:
            thread.join(d.destroy_timeout_s)
        if self.crashes:
            raise self.crashes[0]  # our defect, not the provider's: the lifecycle says so
        return self.requests

    def _ms(self, instant: float) -> float:
        return round((instant - self.start) * 1000, 3)

    def _request(self, i: int) -> None:
        request = self.requests[i]
        self.born.wait()
        pause = self.start + request.planned_ms / 1000 - time.monotonic()
        if pause > 0:
            self.sleep(pause)
        sandbox = None
        try:
            sandbox = create_and_wait(self.ctx, f"create_{i + 1}", request, self._ms)
        except BaseException as exc:  # noqa: B036, BLE001 - raised again in the burst's thread
            self.crashes.append(exc)
        finally:
            self.settled[i].set()
        if sandbox is None:
            return
        self.teardown.wait()
        try:
            self.ctx.destroy_sandbox(sandbox)
        except TrialOutcome as exc:
            request.outcome, request.cause = STUCK, f"could not be deleted: {exc.cause}"[:300]


def create_and_wait(
    ctx: TrialContext, name: str, request: Request, ms: Callable[[float], float]
) -> Any:
    """Send one create now and wait for its sandbox's first answer, filling `request` (its times
    through `ms`, from a monotonic instant); the sandbox, or None if create failed."""
    request.sent_ms = ms(time.monotonic())
    try:
        sandbox, _, returned = ctx.create_here(name)
    except CreateFailed as exc:
        request.end(RATE_LIMITED if exc.code == RATE_LIMITED else PROVIDER_ERROR, exc.cause)
        return None
    except ProviderFailure as exc:  # the trial ended while this create was running
        request.end(PROVIDER_ERROR, exc.cause)
        return None
    request.created_ms = ms(returned)
    try:
        ctx.check_readiness(sandbox)
    except ReadinessFailed as exc:
        attempts = exc.evidence.get("attempts") or [{}]
        never = attempts[-1].get("result") == "not_ready"
        timed_out = "ExecTimeout" in str(attempts[-1].get("error", ""))
        request.end(STUCK if never else TIMEOUT if timed_out else PROVIDER_ERROR, exc.cause)
        return sandbox
    request.ready_ms = ms(time.monotonic())
    request.end(OK)
    return sandbox
