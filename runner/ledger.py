"""The sandboxes and snapshots one trial holds, kept so that cleanup finds every one.

A create past its limit returns in its own thread, possibly after the trial has ended, so the
ledger takes every change behind one lock; once closed, no create may start (cleanup then waits
only for those already running).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from runner.pricing import trial_cost_usd
from runner.providers.base import Sandbox, SandboxSpec


@dataclass
class SandboxEntry:
    """One sandbox the trial created, from its create's start until its destroy returned."""

    sandbox: Sandbox
    spec: SandboxSpec
    held_from: float  # epoch s, when its create was called
    held_to: float | None = None  # epoch s, when its destroy returned or overran
    destroyed: bool = False
    # Its destroy overran and may still hang: calling it again would block the worker once more.
    overran: bool = False
    destroy_ms: float | None = None

    def mark_destroyed(self, at: float, destroy_ms: float) -> None:
        self.held_to, self.destroyed, self.destroy_ms = at, True, destroy_ms

    def mark_overran(self, at: float) -> None:
        self.held_to, self.overran = at, True

    def held_seconds(self, now: float) -> float:
        return max(0.0, (self.held_to or now) - self.held_from)


class SandboxLedger:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[SandboxEntry] = []
        self._snapshots: list[str] = []  # snapshots and temporary images, deleted at cleanup
        self._creating = 0  # create calls in flight, possibly abandoned past their limit
        self._closed = False

    def begin_create(self) -> bool:
        """Count a create call as in flight; False once the ledger is closed (none may start)."""
        with self._lock:
            if self._closed:
                return False
            self._creating += 1
            return True

    def end_create(self, sandbox: Sandbox | None, spec: SandboxSpec, held_from: float) -> None:
        """A create call returned, `sandbox` unless it failed: held until cleanup destroys it."""
        with self._lock:
            self._creating -= 1
            if sandbox is not None:
                self._entries.append(SandboxEntry(sandbox, spec, held_from))
                # A fork's temporary image goes once the sandbox made from it has.
                self._snapshots.extend(sandbox.made_snapshots)

    def add_snapshot(self, snapshot_id: str) -> None:
        with self._lock:
            self._snapshots.append(snapshot_id)

    def close(self) -> None:
        with self._lock:
            self._closed = True

    def sandbox_count(self) -> int:
        with self._lock:
            return len(self._entries)

    def entry(self, sandbox: Sandbox) -> SandboxEntry | None:
        with self._lock:
            return next((e for e in self._entries if e.sandbox.id == sandbox.id), None)

    def since(self, start: int) -> tuple[list[SandboxEntry], int]:
        """The entries from position `start` on and the creates still in flight, read together
        (entries are only ever appended)."""
        with self._lock:
            return self._entries[start:], self._creating

    def snapshots(self) -> list[str]:
        with self._lock:
            return list(self._snapshots)

    def held_spans(self, now: float) -> list[tuple[float, float]]:
        """(from, to) in epoch s for each sandbox; one not destroyed yet is held until `now`."""
        with self._lock:
            return [(e.held_from, e.held_to or now) for e in self._entries]

    def cost_usd(self, pricing: dict, now: float) -> float | None:
        """What the sandboxes cost at `pricing`, or None with no rates (an unknown price is not
        a zero price)."""
        total = None
        with self._lock:
            entries = list(self._entries)
        for entry in entries:
            spec = entry.spec
            cost = trial_cost_usd(pricing, spec.cpus, spec.memory_mib, entry.held_seconds(now))
            if cost is not None:
                total = (total or 0.0) + cost
        return total
