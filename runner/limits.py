"""The limits and knobs one trial's lifecycle applies (runner/lifecycle.py, runner/cleanup.py);
tests shorten them."""

from __future__ import annotations

from dataclasses import dataclass

from runner import waiting
from runner.readiness import ReadinessPolicy

# The time the lifecycle's waits read and spend: the readiness backoff, the grace for a create
# still in flight, confirming a sandbox gone. Tests pass one whose sleeps return at once, so they
# do not wait; measurements and the watchdogs always use real time.
Timer = waiting.Clock


@dataclass(frozen=True)
class Limits:
    """Step limits and knobs the lifecycle applies; tests shorten them."""

    readiness: ReadinessPolicy = ReadinessPolicy()
    poll_interval_s: float = 10.0  # long background commands
    gone_timeout_s: float = 30.0  # cleanup verification
    # How long cleanup waits for a create still in flight (an overrun create, or one a cut-short
    # procedure started) to return a sandbox it can destroy, before calling cleanup unverified.
    late_create_grace_s: float = 30.0
    timer: Timer = Timer()
