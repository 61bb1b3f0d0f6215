"""Liveness of running trials: a daemon thread per chain step writes `Trial.heartbeat_at` of every
trial the chain's workers hold, and `ChainProgress.heartbeat_at` of the step, every
`RUNNER_HEARTBEAT_S` seconds.

A running trial whose heartbeat is older than `RUNNER_ORPHAN_AFTER_S` has lost its worker
(killed, OOM, host gone): runner/recovery.py ends it. The trial's own work never waits for a
heartbeat, and a heartbeat that cannot be written (the database is away) is tried again every
second, so it resumes as soon as the database does.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import DatabaseError, connections

from runner import store

log = logging.getLogger(__name__)
RETRY_S = 1.0


class Heartbeat:
    """Beats for the trials added to it until they are removed; `stop()` ends the thread."""

    def __init__(self, name: str, interval_s: float | None = None, chain: tuple | None = None):
        self.interval_s = interval_s or settings.RUNNER_HEARTBEAT_S
        self.name = name
        self.chain = chain  # (run id, provider): its running step beats too
        self._trials: set = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.beats = 0
        self.failures = 0
        self._down = 0  # failures in a row

    def add(self, trial_id) -> None:
        with self._lock:
            self._trials.add(trial_id)

    def remove(self, trial_id) -> None:
        with self._lock:
            self._trials.discard(trial_id)

    def start(self) -> Heartbeat:
        name = f"heartbeat-{self.name}"
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> Heartbeat:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def beat(self) -> bool:
        """Write one heartbeat for the trials held now; False if the database is away."""
        with self._lock:
            held = list(self._trials)
        if not held and self.chain is None:
            return True
        try:
            if held:
                store.beat(held)
            if self.chain is not None:
                store.beat_chain(*self.chain)
        except DatabaseError as exc:
            if not self._down:
                log.warning("heartbeat of %s not written, retrying each second: %s", self.name, exc)
            self._down += 1
            self.failures += 1
            # A broken connection is not reused: the next beat opens a new one.
            connections["default"].close_if_unusable_or_obsolete()
            return False
        if self._down:
            log.warning("heartbeat of %s written again after %d failure(s)", self.name, self._down)
            self._down = 0
        self.beats += 1
        return True

    def _loop(self) -> None:
        try:
            wait = self.interval_s
            while not self._stop.wait(wait):
                wait = self.interval_s if self.beat() else min(RETRY_S, self.interval_s)
        finally:
            connections.close_all()
