"""Waiting for something to happen, and trying a call again: the one place that spends time.

Two shapes recur in the runner and its adapters:

- `poll_until(ready, within_s, backoff)`: ask until the answer is yes ("is the sandbox gone?",
  "is it running?", "has the command exited?"); False when `within_s` passed with a no.
- `retry_while(retryable, call, within_s, backoff)`: call again while the call fails in a way
  that may pass (a database outage, a server restarting); then that error.

The policy (how long, how often) is a `Backoff` chosen, and named, by each caller. The time
read and spent is a `Clock`, so tests pass time without waiting. No Django: tested directly.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Clock:
    """The time a wait reads and spends; tests pass one whose sleeps return at once."""

    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


REAL_CLOCK = Clock()


@dataclass(frozen=True)
class Backoff:
    """The pauses between tries: `first_s`, then each `factor` times the last, at most `cap_s`;
    each then spread by +-`jitter` (a fraction), so the cap can be exceeded by the jitter."""

    first_s: float
    factor: float = 1.0
    cap_s: float = math.inf
    jitter: float = 0.0

    def pauses(self, rng: random.Random | None = None) -> Iterator[float]:
        if self.jitter:
            rng = rng or random.Random()
        wait = self.first_s
        while True:
            yield wait * rng.uniform(1 - self.jitter, 1 + self.jitter) if rng else wait
            wait = min(wait * self.factor, self.cap_s)


def every(seconds: float) -> Backoff:
    """The same pause each time."""
    return Backoff(first_s=seconds)


def poll_until(
    ready: Callable[[], bool],
    within_s: float,
    backoff: Backoff,
    clock: Clock = REAL_CLOCK,
    *,
    ask_first: bool = True,
) -> bool:
    """Ask `ready()` until it says yes (True), pausing between asks; False once `within_s` have
    passed with a no. It is asked at least once, and once more after the last pause.

    `ask_first=False` pauses before the first ask, for a caller that has just looked itself.
    Errors `ready()` raises are the caller's: they end the wait.
    """
    deadline = clock.monotonic() + within_s
    pauses = backoff.pauses()
    if not ask_first:
        clock.sleep(next(pauses))
    while True:
        if ready():
            return True
        if clock.monotonic() > deadline:
            return False
        clock.sleep(next(pauses))


def retry_while(
    retryable: Callable[[BaseException], bool],
    call: Callable[[], T],
    within_s: float,
    backoff: Backoff,
    clock: Clock = REAL_CLOCK,
    *,
    errors: tuple[type[BaseException], ...] = (Exception,),
    on_retry: Callable[[BaseException, float], None] | None = None,
) -> T:
    """`call()`, called again after a pause while it raises one of `errors` that `retryable`
    accepts; that error once the next pause would end past `within_s` from the first call.

    `on_retry(error, pause)` runs before each pause (to log it, to drop a broken connection).
    """
    deadline = clock.monotonic() + within_s
    pauses = backoff.pauses()
    while True:
        try:
            return call()
        except errors as exc:
            pause = next(pauses)
            if not retryable(exc) or clock.monotonic() + pause > deadline:
                raise
            if on_retry is not None:
                on_retry(exc, pause)
        clock.sleep(pause)
