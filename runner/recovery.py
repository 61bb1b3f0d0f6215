"""Recovery of orphaned trials: a worker or qcluster that died mid-trial leaves a Trial "running"
and possibly a live sandbox. Nothing else would ever end either.

A running trial is an orphan once it has run longer than its benchmark could (create, procedure
and destroy limits plus a margin for readiness, probes and cleanup checks). It is then written
through the runner's own store as the lifecycle writes a trial cut short: outcome provider
failure, owner unknown, cause "cut short: worker lost", and the Trial's `cut_short` column that
runner/store.py writes (an unknown outcome stops refilling for that provider: chain.Chain reads
the stored column). Its batch's sandboxes are then
destroyed through the provider and confirmed gone.

The trial is written first, conditional on it still running, so a worker that was only slow
loses the race cleanly (its own save fails) instead of finding its sandbox destroyed under a trial
that then reports success. Sandboxes are destroyed only for batches that no live trial still
uses: sibling trials of one batch share its label.

Entry points: `recover_orphans()` (plain function; `scheduled_recovery` for a django-q2
Schedule) and `manage.py bench recover`.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.utils import timezone

from runner import adapters, runs, store
from runner.benchmarks import all_benchmarks
from runner.lifecycle import EvidenceRecord, TrialResult
from runner.outcomes import Outcome

log = logging.getLogger(__name__)

# Readiness (10 s), placement probes (30 s), cleanup confirmation (30 s) and database writes.
MARGIN = timedelta(minutes=5)
# Used for a benchmark no longer in the code: the largest limits a definition has by default.
UNKNOWN_BENCHMARK_LIMIT = timedelta(minutes=30) + MARGIN
CAUSE = "cut short: worker lost"
GONE_TIMEOUT_S = 30.0


@dataclass
class Orphan:
    trial_id: str
    run_id: str
    provider: str
    batch: str
    started_at: datetime | None
    limit: timedelta
    recovered: bool = False  # False: the trial ended on its own before recovery wrote it


@dataclass
class RecoveryReport:
    orphans: list[Orphan] = field(default_factory=list)
    destroyed: list[str] = field(default_factory=list)  # "<provider> <sandbox id>"
    deferred: list[str] = field(default_factory=list)  # batches still used by a live trial
    errors: list[str] = field(default_factory=list)
    runs_finished: list[str] = field(default_factory=list)

    @property
    def recovered(self) -> list[Orphan]:
        return [o for o in self.orphans if o.recovered]

    def summary(self) -> str:
        return (
            f"{len(self.recovered)} orphaned trial(s) recovered, "
            f"{len(self.destroyed)} sandbox(es) destroyed, {len(self.deferred)} batch(es) "
            f"deferred, {len(self.errors)} error(s)"
        )


def trial_limit(benchmark_slug: str, modules: dict | None = None) -> timedelta:
    """The longest a trial of this benchmark can legitimately run."""
    modules = all_benchmarks() if modules is None else modules
    module = modules.get(benchmark_slug)
    if module is None:
        return UNKNOWN_BENCHMARK_LIMIT
    d = module.DEFINITION
    return timedelta(seconds=d.create_timeout_s + d.procedure_timeout_s + d.destroy_timeout_s) + (
        MARGIN
    )


def find_orphans(max_age: timedelta | None = None, now: datetime | None = None) -> list[Orphan]:
    """Running trials older than their limit (or than `max_age`, when given)."""
    now = now or timezone.now()
    modules = all_benchmarks()
    found = []
    for pk, run_id, provider, benchmark, batch, started_at in store.running_trials():
        limit = max_age if max_age is not None else trial_limit(benchmark, modules)
        # claim_trial always sets started_at: a running trial without one was not claimed by
        # this runner and cannot be followed by anyone.
        if started_at is None or now - started_at > limit:
            found.append(Orphan(str(pk), str(run_id), provider, batch, started_at, limit))
    return found


def recover_orphans(
    max_age: timedelta | float | None = None,
    *,
    dry_run: bool = False,
    provider_factory: Callable | None = None,
) -> RecoveryReport:
    """End orphaned trials as cut short and destroy their sandboxes; see the module docstring.

    `max_age` (a timedelta or seconds) replaces every benchmark's own limit, for an operator who
    knows the workers are gone.
    """
    if isinstance(max_age, int | float):
        max_age = timedelta(seconds=max_age)
    if max_age is not None and max_age < timedelta(0):
        raise ValueError(f"max_age must be 0 or more, got {max_age}")
    now = timezone.now()
    report = RecoveryReport(orphans=find_orphans(max_age, now))
    if dry_run or not report.orphans:
        return report
    for orphan in report.orphans:
        orphan.recovered = _end_trial(orphan, now)
    _destroy_sandboxes(report, provider_factory or adapters.provider_factory)
    for run_id in sorted({o.run_id for o in report.recovered}):
        if _finish_cancelling_run(run_id):
            report.runs_finished.append(run_id)
    if report.recovered:
        log.warning("orphan recovery: %s", report.summary())
    return report


def scheduled_recovery() -> str:
    """A django-q2 Schedule target: `runner.recovery.scheduled_recovery` every few minutes."""
    return recover_orphans().summary()


def _end_trial(orphan: Orphan, now: datetime) -> bool:
    overdue = None if orphan.started_at is None else (now - orphan.started_at - orphan.limit)
    result = TrialResult(
        outcome=Outcome.PROVIDER_FAILURE,
        owner="unknown",
        cause=CAUSE,
        started_at=orphan.started_at,
        ended_at=now,
        # Not verified yet: the sandboxes are destroyed after this write (see the docstring).
        cleanup_verified=False,
        cut_short=True,
        evidence=[
            EvidenceRecord(
                "recovery",
                {
                    "limit_s": orphan.limit.total_seconds(),
                    "overdue_s": None if overdue is None else overdue.total_seconds(),
                    "batch": orphan.batch,
                },
                at=now,
            )
        ],
    )
    try:
        store.save_result(orphan.trial_id, result)
    except store.TrialNotRunning:
        return False
    return True


def _destroy_sandboxes(report: RecoveryReport, provider_factory: Callable) -> None:
    batches = defaultdict(set)
    for orphan in report.recovered:
        if orphan.batch:
            batches[orphan.provider].add(orphan.batch)
    still_used = store.batches_in_use(_flatten(batches))
    for provider_slug, labels in sorted(batches.items()):
        deferred = sorted(b for b in labels if (provider_slug, b) in still_used)
        report.deferred += [f"{provider_slug} {b}" for b in deferred]
        labels = labels - set(deferred)
        if not labels:
            continue
        try:
            provider = provider_factory(provider_slug)
            live = [s for s in provider.list_sandboxes() if s.label in labels]
        except Exception as exc:  # noqa: BLE001 - any provider error is reported, not fatal
            report.errors.append(f"{provider_slug}: cannot list sandboxes: {exc}")
            continue
        verified = {label: True for label in labels}
        for sandbox in live:
            name = f"{provider_slug} {sandbox.id}"
            try:
                provider.destroy(sandbox)
                gone = _wait_gone(provider, sandbox.id)
            except Exception as exc:  # noqa: BLE001
                report.errors.append(f"{name}: destroy failed: {exc}")
                verified[sandbox.label] = False
                continue
            if not gone:
                report.errors.append(f"{name}: still exists {GONE_TIMEOUT_S:g} s after destroy")
                verified[sandbox.label] = False
                continue
            report.destroyed.append(name)
        # Record on each recovered trial that its batch's sandboxes are confirmed gone.
        store.mark_cleanup_verified(
            [o.trial_id for o in report.recovered if verified.get(o.batch) is True]
        )


def _wait_gone(provider, sandbox_id: str, timeout_s: float = GONE_TIMEOUT_S) -> bool:
    deadline = time.monotonic() + timeout_s
    wait = 0.005
    while not provider.is_gone(sandbox_id):
        if time.monotonic() > deadline:
            return False
        time.sleep(wait)
        wait = min(wait * 2, 0.5)
    return True


def _finish_cancelling_run(run_id: str) -> bool:
    """A cancelled run waits for its running trials to end: recovery may have ended the last."""
    if not store.run_is_cancelling(run_id):
        return False
    return runs.finish_if_done(run_id)


def _flatten(batches: dict) -> list[str]:
    return sorted({b for labels in batches.values() for b in labels})
