"""What the runner's tests share: short lifecycle limits and one probe trial on a provider."""

import dataclasses
import threading
import time

from runner import lifecycle
from runner.benchmarks.base import BenchmarkDefinition, UnitDefinition
from runner.limits import Limits, Timer
from runner.readiness import ReadinessPolicy

# Short limits where a test waits them out; the readiness deadline stays a few seconds, since a
# loaded machine can take longer than 0.5 s to answer the first `true` and the tests that are
# not about readiness must not fail on it (the deadline test sets its own).
FAST = Limits(readiness=ReadinessPolicy(deadline_s=5.0), poll_interval_s=0.05, gone_timeout_s=0.5)

UNIT = UnitDefinition("default")
DEFINITION = BenchmarkDefinition(
    slug="probe",
    title="Probe",
    section="sandbox_operations",
    metric="echo_ms",
    unit="ms",
    direction="lower",
    clock="guest",
    procedure_timeout_s=30,
    lifetime_s=120,
)


def echo(ctx):
    run = ctx.guest("echo hello", timeout=10)
    assert run.stdout == b"hello\n"
    ctx.record("echo_ms", run.runtime_ms, gate="pass")


def trial(provider, procedure=echo, definition=DEFINITION, **kwargs):
    """One probe trial through the real lifecycle (`echo` unless told otherwise)."""
    kwargs.setdefault("limits", FAST)
    kwargs.setdefault("label", "bb-test-lifecycle")
    return lifecycle.run_trial(provider, definition, UNIT, procedure, **kwargs)


class SkippedTime:
    """A lifecycle timer whose sleeps return at once and move its monotonic clock on instead,
    so a test of the lifecycle's waits (backoff, deadlines, grace) does not spend them."""

    def __init__(self):
        self.skipped = 0.0
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        return time.monotonic() + self.skipped

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self.skipped += seconds
        time.sleep(0)  # still let other threads run, as a real sleep would

    def limits(self, base: Limits = FAST, **changes) -> Limits:
        timer = Timer(monotonic=self.monotonic, sleep=self.sleep)
        return dataclasses.replace(base, timer=timer, **changes)
