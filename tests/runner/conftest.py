import dataclasses
import threading
import time

import pytest

from runner import adapters, chain, lifecycle

# Short limits where a test waits them out; the readiness deadline stays a few seconds, since a
# loaded machine can take longer than 0.5 s to answer the first `true` and the tests that are
# not about readiness must not fail on it (the deadline test sets its own).
FAST = lifecycle.Limits(
    readiness=lifecycle.ReadinessPolicy(deadline_s=5.0), poll_interval_s=0.05, gone_timeout_s=0.5
)


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

    def limits(self, base: lifecycle.Limits = FAST, **changes) -> lifecycle.Limits:
        timer = lifecycle.Timer(monotonic=self.monotonic, sleep=self.sleep)
        return dataclasses.replace(base, timer=timer, **changes)


@pytest.fixture
def skipped_time():
    return SkippedTime()


@pytest.fixture
def chain_provider(local, monkeypatch, settings):
    """Make runs use `local` (optionally wrapped; the fixture is in tests/conftest.py) with short
    lifecycle limits; returns a setter. The job host counts as large, so tests not about the
    shared-host cap (test_schedule.py) plan the parallel trials they ask for."""
    settings.RUNNER_JOB_HOST_CPUS = 256
    current = {"provider": local}
    monkeypatch.setattr(adapters, "provider_factory", lambda slug: current["provider"])
    monkeypatch.setattr(chain, "lifecycle_limits", FAST)

    def use(provider):
        current["provider"] = provider
        return provider

    return use
