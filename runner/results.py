"""What one trial produced: its outcome, measurements and evidence, as runner/lifecycle.py returns
them and runner/store.py writes them (and runner/recovery.py, for a trial it ends itself).

Kept apart from the engine so the store and recovery read a trial's result without importing
the code that runs one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from runner.outcomes import Clock, ClockGate, EvidenceKind, MeasurementKind, Outcome, Owner


@dataclass
class MeasurementRecord:
    name: str
    value: float | None
    kind: MeasurementKind = MeasurementKind.METRIC
    unit: str = "ms"
    clock: Clock = Clock.GUEST
    gate: ClockGate = ClockGate.NOT_APPLICABLE


@dataclass
class EvidenceRecord:
    kind: EvidenceKind
    data: dict
    at: datetime = field(default_factory=lambda: datetime.now(UTC))


@dataclass
class TrialResult:
    outcome: Outcome = Outcome.SUCCESS
    owner: Owner = Owner.NONE
    cause: str = ""
    measurements: list[MeasurementRecord] = field(default_factory=list)
    evidence: list[EvidenceRecord] = field(default_factory=list)
    # A burst's per-request records, in submission order (runner/benchmarks/burst.py).
    requests: list[dict] = field(default_factory=list)
    placement: dict = field(default_factory=dict)
    host_load: dict = field(default_factory=dict)
    cost_usd: float | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    # Wall-clock (epoch s) spans during which this trial held a sandbox, for in-flight tracking.
    held: list[tuple[float, float]] = field(default_factory=list)
    cleanup_verified: bool = True
    # A step overran its limit: the outcome is unknown (not the same as an unknown owner), which
    # stops refilling. Stored as the Trial's `cut_short` column (runner/store.py).
    cut_short: bool = False

    def fail(self, outcome: Outcome, owner: Owner, cause: str) -> None:
        """Keep the first failure: the first failed step ends the trial and names its cause."""
        if self.outcome == Outcome.SUCCESS:
            self.outcome, self.owner, self.cause = outcome, owner, cause
