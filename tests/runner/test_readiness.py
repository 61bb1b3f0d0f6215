"""The readiness backoff as a pure function of its clock: cap first, then jitter."""

import random

import pytest

from runner.providers.base import ExecResult, NotReady
from runner.readiness import ReadinessFailed, ReadinessPolicy, readiness_check


class NotReadyFor:
    """Answers NotReady `times` times, then `true` succeeds."""

    def __init__(self, times):
        self.times = times

    def exec(self, sandbox, argv, timeout):
        assert argv == ["true"] and timeout == 30.0
        if self.times:
            self.times -= 1
            raise NotReady("HTTP 503")
        return ExecResult(0, b"", b"")


class FakeClock:
    def __init__(self):
        self.now = 100.0
        self.sleeps = []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def check(provider, clock, seed=7):
    return readiness_check(
        provider,
        None,
        ReadinessPolicy(),
        rng=random.Random(seed),
        sleep=clock.sleep,
        monotonic=clock.monotonic,
    )


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_it_caps_the_backoff_at_200_ms_then_jitters_it_by_20_percent(seed):
    clock = FakeClock()
    evidence = check(NotReadyFor(12), clock, seed)
    bases = [min(0.020 * 1.5**k, 0.200) for k in range(12)]
    assert len(clock.sleeps) == 12
    for wait, base in zip(clock.sleeps, bases, strict=True):
        assert base * 0.8 <= wait <= base * 1.2
    assert max(clock.sleeps) > 0.200  # jitter applies after the cap (documented choice)
    assert [a["result"] for a in evidence["attempts"]] == ["not_ready"] * 12 + ["ready"]
    assert evidence["tti_ms"] == pytest.approx(sum(clock.sleeps) * 1000)


def test_it_sends_no_attempt_more_than_10_s_after_the_first():
    clock = FakeClock()
    with pytest.raises(ReadinessFailed, match="10 s deadline") as failed:
        check(NotReadyFor(10_000), clock)
    attempts = failed.value.evidence["attempts"]
    assert attempts[-1]["at_ms"] <= 10_000
    assert attempts[-1]["at_ms"] + attempts[-1]["wait_ms"] > 10_000
