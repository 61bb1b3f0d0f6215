"""Waiting and retrying as pure functions of their clock: no Django, no real time."""

import ast
import itertools
import math
import random
from pathlib import Path

import pytest

from runner import waiting
from runner.waiting import Backoff, Clock, every, poll_until, retry_while


class FakeClock:
    """Time passes only when slept; every sleep is kept."""

    def __init__(self):
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds

    @property
    def clock(self):
        return Clock(monotonic=self.monotonic, sleep=self.sleep)


def test_a_backoff_grows_by_its_factor_up_to_its_cap():
    pauses = Backoff(first_s=0.005, factor=2, cap_s=0.5).pauses()
    assert list(itertools.islice(pauses, 9)) == [
        0.005,
        0.01,
        0.02,
        0.04,
        0.08,
        0.16,
        0.32,
        0.5,
        0.5,
    ]


def test_every_gives_the_same_pause_each_time():
    assert list(itertools.islice(every(0.05).pauses(), 4)) == [0.05] * 4
    assert every(0.05).cap_s == math.inf


def test_jitter_spreads_each_pause_after_the_cap():
    policy = Backoff(first_s=0.02, factor=1.5, cap_s=0.2, jitter=0.2)
    pauses = list(itertools.islice(policy.pauses(random.Random(3)), 20))
    bases = [min(0.02 * 1.5**k, 0.2) for k in range(20)]
    for pause, base in zip(pauses, bases, strict=True):
        assert base * 0.8 <= pause <= base * 1.2
    assert pauses != bases
    assert pauses == list(itertools.islice(policy.pauses(random.Random(3)), 20))


def test_poll_until_stops_at_the_first_yes_without_pausing_after_it():
    fake = FakeClock()
    answers = iter([False, False, True])
    assert poll_until(lambda: next(answers), 10, Backoff(0.1, 2, 1), fake.clock)
    assert fake.sleeps == [0.1, 0.2]


def test_poll_until_asks_once_more_after_the_deadline_then_says_no():
    fake = FakeClock()
    asked_at = []

    def ready():
        asked_at.append(fake.now - 1000.0)
        return False

    assert not poll_until(ready, 1.0, every(0.3), fake.clock)
    assert asked_at == pytest.approx([0.0, 0.3, 0.6, 0.9, 1.2])
    assert len(fake.sleeps) == 4


def test_poll_until_asks_at_least_once_even_with_no_time():
    fake = FakeClock()
    assert poll_until(lambda: True, 0, every(1), fake.clock)
    assert fake.sleeps == []


def test_poll_until_can_pause_before_its_first_ask():
    fake = FakeClock()
    asked_at = []

    def ready():
        asked_at.append(fake.now - 1000.0)
        return True

    assert poll_until(ready, 5, every(0.5), fake.clock, ask_first=False)
    assert asked_at == [0.5]


def test_an_error_from_ready_ends_the_wait():
    fake = FakeClock()

    def ready():
        raise RuntimeError("sandbox failed")

    with pytest.raises(RuntimeError, match="sandbox failed"):
        poll_until(ready, 5, every(0.5), fake.clock)
    assert fake.sleeps == []


class FailsFor:
    """Raises `error` `times` times, then returns "done"."""

    def __init__(self, times, error=None):
        self.times = times
        self.error = error or ConnectionError("refused")
        self.calls = 0

    def __call__(self):
        self.calls += 1
        if self.calls <= self.times:
            raise self.error
        return "done"


def test_retry_while_returns_the_answer_after_retryable_errors():
    fake = FakeClock()
    call = FailsFor(3)
    assert retry_while(lambda e: True, call, 60, Backoff(0.25, 2, 2), fake.clock) == "done"
    assert call.calls == 4
    assert fake.sleeps == [0.25, 0.5, 1.0]


def test_retry_while_raises_an_error_it_may_not_retry_at_once():
    fake = FakeClock()
    call = FailsFor(3, ValueError("bad request"))
    retryable = lambda e: not isinstance(e, ValueError)  # noqa: E731
    with pytest.raises(ValueError, match="bad request"):
        retry_while(retryable, call, 60, every(1), fake.clock)
    assert call.calls == 1 and fake.sleeps == []


def test_retry_while_only_catches_the_errors_it_is_given():
    fake = FakeClock()
    call = FailsFor(1, KeyError("x"))
    with pytest.raises(KeyError):
        retry_while(lambda e: True, call, 60, every(1), fake.clock, errors=(ConnectionError,))
    assert fake.sleeps == []


def test_retry_while_gives_up_before_a_pause_that_would_end_past_its_time():
    fake = FakeClock()
    call = FailsFor(100)
    with pytest.raises(ConnectionError):
        retry_while(lambda e: True, call, 5, Backoff(0.25, 2, 5), fake.clock)
    # 0.25 + 0.5 + 1 + 2 = 3.75 s slept; the next pause (4 s) would end at 7.75 s, past 5 s.
    assert fake.sleeps == [0.25, 0.5, 1.0, 2.0]
    assert call.calls == 5


def test_retry_while_tells_on_retry_each_error_and_pause():
    fake = FakeClock()
    seen = []
    retry_while(
        lambda e: True,
        FailsFor(2),
        60,
        Backoff(1, 3),
        fake.clock,
        on_retry=lambda error, pause: seen.append((str(error), pause)),
    )
    assert seen == [("refused", 1), ("refused", 3)]


def test_the_helper_imports_nothing_of_django_or_the_project():
    tree = ast.parse(Path(waiting.__file__).read_text(encoding="utf-8"))
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert not {name for name in imported if name.split(".")[0] in {"django", "boxbench", "runner"}}
