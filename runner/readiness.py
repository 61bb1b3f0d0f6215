"""The readiness check of the common methodology ("Trial Lifecycle"): after create, send `true`
(30 s per attempt, no clock wrapper) until the sandbox answers, retrying not-ready answers with
backoff 20 ms x1.5 capped at 200 ms, +-20 % jitter, no attempt more than 10 s after the first.
Every attempt is kept as evidence, on success and on failure."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from runner import waiting
from runner.benchmarks.base import ProviderFailure
from runner.providers.base import NotReady, Sandbox


@dataclass(frozen=True)
class ReadinessPolicy:
    attempt_timeout_s: float = 30.0
    first_wait_s: float = 0.020
    factor: float = 1.5
    cap_s: float = 0.200
    jitter: float = 0.20
    deadline_s: float = 10.0

    @property
    def backoff(self) -> waiting.Backoff:
        return waiting.Backoff(self.first_wait_s, self.factor, self.cap_s, self.jitter)


class ReadinessFailed(ProviderFailure):
    """The sandbox never answered; `evidence` holds every attempt, so a failed check keeps it."""

    evidence: dict


def readiness_check(
    provider,
    sandbox: Sandbox,
    policy: ReadinessPolicy = ReadinessPolicy(),
    *,
    rng: random.Random | None = None,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> dict:
    """Wait until `sandbox` accepts commands. Returns the evidence; raises ReadinessFailed.

    The evidence is also attached to the exception (`.evidence`) so a failed check keeps it.
    """
    pauses = policy.backoff.pauses(rng or random.Random())
    attempts: list[dict] = []
    evidence: dict = {"attempts": attempts, "tti_ms": None}
    first = monotonic()
    # Its own loop, not waiting.retry_while: every attempt, and the pause after it, is evidence.
    while True:
        started = monotonic()
        attempt: dict = {"at_ms": round((started - first) * 1000, 3)}
        attempts.append(attempt)
        try:
            result = provider.exec(sandbox, ["true"], timeout=policy.attempt_timeout_s)
        except NotReady as exc:
            attempt.update(result="not_ready", error=str(exc))
        except Exception as exc:  # noqa: BLE001 - "fails with any other error" ends the trial
            attempt.update(result="error", error=f"{type(exc).__name__}: {exc}")
            attempt["duration_ms"] = _ms(monotonic() - started)
            _fail_readiness(evidence, f"readiness check failed: {type(exc).__name__}: {exc}")
        else:
            if result.exit_code == 0:
                attempt.update(result="ready", duration_ms=_ms(monotonic() - started))
                evidence["tti_ms"] = _ms(monotonic() - first)
                return evidence
            attempt.update(result="error", exit_code=result.exit_code)
            _fail_readiness(evidence, f"readiness check: `true` exited {result.exit_code}")
        attempt["duration_ms"] = _ms(monotonic() - started)
        pause = next(pauses)
        attempt["wait_ms"] = _ms(pause)
        if monotonic() + pause - first > policy.deadline_s:
            _fail_readiness(
                evidence,
                f"readiness check reached its {policy.deadline_s:g} s deadline after "
                f"{len(attempts)} not-ready answers",
            )
        sleep(pause)


def _fail_readiness(evidence: dict, cause: str):
    error = ReadinessFailed(cause)
    error.evidence = evidence
    raise error


def _ms(seconds: float) -> float:
    return seconds * 1000.0
