"""Recovery of orphaned trials: a worker or qcluster that died mid-trial leaves a Trial "running"
and possibly a live sandbox. Nothing else would ever end either.

A running trial is an orphan once its heartbeat (runner/heartbeat.py, every few seconds while its
worker lives) is older than `RUNNER_ORPHAN_AFTER_S` (75 s by default). A trial claimed without a
heartbeat (by code older than the column) is an orphan once it has run longer than its benchmark
could (create, procedure and destroy limits plus a margin for readiness, probes and cleanup
checks). It is then written
through the runner's own store as the lifecycle writes a trial cut short: outcome provider
failure, owner unknown, cause "cut short: worker lost", and the Trial's `cut_short` column that
runner/store.py writes (an unknown outcome stops refilling for that provider: chain.Chain reads
the stored column). Its batch's sandboxes are then
destroyed through the provider and confirmed gone.

The trial is written first, conditional on it still running, so a worker that was only slow
loses the race cleanly (its own save fails) instead of finding its sandbox destroyed under a trial
that then reports success. Sandboxes are destroyed only for batches that no live trial still
uses: sibling trials of one batch share its label.

Entry points: `recover_orphans()` (plain function), `scheduled_recovery` (the django-q2 Schedule
that migrate installs, every minute), `startup_recovery` (each qcluster, when its workers start)
and `manage.py bench recover`.
"""

from __future__ import annotations

import dataclasses
import fcntl
import logging
import os
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connections

from runner import adapters, runs, steps, store, waiting
from runner.benchmarks import all_benchmarks
from runner.cleanup import GONE_BACKOFF
from runner.declarations import get_declaration
from runner.outcomes import EvidenceKind, Outcome, Owner
from runner.results import EvidenceRecord, TrialResult

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
    job_host: str = ""
    # The heartbeat (or, without one, the start) that the limit is counted from.
    last_seen: datetime | None = None
    recovered: bool = False  # False: the trial ended on its own before recovery wrote it


@dataclass
class RecoveryReport:
    orphans: list[Orphan] = field(default_factory=list)
    destroyed: list[str] = field(default_factory=list)  # "<provider> <sandbox id>"
    deferred: list[str] = field(default_factory=list)  # batches still used by a live trial
    errors: list[str] = field(default_factory=list)
    runs_finished: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)  # "<run> <provider> step <n>"
    # Names this sweep in the evidence it writes: another sweep at once can read the same
    # database time, so the end time alone cannot tell whose write ended a trial.
    sweep: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def recovered(self) -> list[Orphan]:
        return [o for o in self.orphans if o.recovered]

    def summary(self) -> str:
        return (
            f"{len(self.recovered)} orphaned trial(s) recovered, "
            f"{len(self.destroyed)} sandbox(es) destroyed, {len(self.deferred)} batch(es) "
            f"deferred, {len(self.resumed)} chain step(s) resumed, {len(self.errors)} error(s)"
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


def orphan_after() -> timedelta:
    return timedelta(seconds=settings.RUNNER_ORPHAN_AFTER_S)


def find_orphans(max_age: timedelta | None = None, now: datetime | None = None) -> list[Orphan]:
    """Running trials whose heartbeat is stale (or older than `max_age`, when given)."""
    now = now or store.db_now()
    modules = all_benchmarks()
    stale = orphan_after()
    found = []
    for pk, run_id, provider, benchmark, batch, started_at, beat, host in store.running_trials():
        if max_age is not None:
            limit, since = max_age, started_at
        elif beat is not None:
            limit, since = stale, beat
        else:
            limit, since = trial_limit(benchmark, modules), started_at
        # claim_trial always sets started_at: a running trial without one was not claimed by
        # this runner and cannot be followed by anyone.
        # Clamped: the database clock can read a millisecond behind a Python timestamp.
        if since is None or max(now - since, timedelta(0)) >= limit:
            found.append(
                Orphan(str(pk), str(run_id), provider, batch, started_at, limit, host, since)
            )
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
    now = store.db_now()
    report = RecoveryReport(orphans=find_orphans(max_age, now))
    if dry_run:
        return report
    for orphan in report.orphans:
        orphan.recovered = end_trial(orphan, now, report.sweep)
    # Trials of this host that recovery elsewhere ended but whose sandboxes it could not reach.
    left = [
        Orphan(str(pk), str(run_id), provider, batch, None, timedelta(0), settings.JOB_HOST)
        for pk, run_id, provider, batch in store.unverified_cut_short(settings.JOB_HOST)
        if str(pk) not in {o.trial_id for o in report.orphans}
    ]
    targets = report.recovered + [dataclasses.replace(o, recovered=True) for o in left]
    if targets:
        _destroy_sandboxes(report, provider_factory or adapters.provider_factory, targets)
    for run_id in sorted({o.run_id for o in report.recovered}):
        # A running run whose chains are done, or a cancelling one, waited for this trial.
        if runs.finish_if_done(run_id):
            report.runs_finished.append(run_id)
    report.resumed = resume_chains(now)
    if report.recovered or report.resumed:
        log.warning("orphan recovery: %s", report.summary())
    return report


def resume_chains(now: datetime | None = None) -> list[str]:
    """Re-enqueue chain steps whose worker was lost (stale heartbeat) or whose task has waited
    in the queue past the orphan limit. The step's own claim makes a duplicate harmless, and
    its batch runs only what is still queued, so no trial runs twice."""
    stale = (now or store.db_now()) - orphan_after()
    resumed = []
    for chain in store.lost_steps(stale, stale):
        if store.requeue_step(chain, stale):
            steps.enqueue(chain.run_id, chain.provider, chain.step, chain.job_host)
            resumed.append(f"{chain.run_id} {chain.provider} step {chain.step}")
    return resumed


def scheduled_recovery() -> str:
    """The django-q2 Schedule's target (every minute): failures kept while the database was
    away are recorded, then orphans are recovered."""
    failed = runs.apply_pending_failures()
    summary = recover_orphans().summary()
    return f"{summary}; {len(failed)} run failure(s) recorded late" if failed else summary


def end_trial(orphan: Orphan, now: datetime, sweep: str) -> bool:
    """End one orphan as cut short (its sandboxes are destroyed after); False when its worker
    or another sweep ended it first. Concurrency tests replace it to hold a sweep mid-way."""
    overdue = None if orphan.last_seen is None else (now - orphan.last_seen - orphan.limit)
    result = TrialResult(
        outcome=Outcome.PROVIDER_FAILURE,
        owner=Owner.UNKNOWN,
        cause=CAUSE,
        started_at=orphan.started_at,
        ended_at=now,
        # Not verified yet: the sandboxes are destroyed after this write (see the docstring).
        cleanup_verified=False,
        cut_short=True,
        evidence=[
            EvidenceRecord(
                EvidenceKind.RECOVERY,
                {
                    "limit_s": orphan.limit.total_seconds(),
                    "last_seen": orphan.last_seen.isoformat() if orphan.last_seen else None,
                    "job_host": orphan.job_host,
                    "overdue_s": None if overdue is None else overdue.total_seconds(),
                    "batch": orphan.batch,
                    "sweep": sweep,
                },
                at=now,
            )
        ],
    )
    try:
        store.save_result(orphan.trial_id, result, recognise=False)
    except store.TrialNotRunning:
        # Ended meanwhile by its worker or by another sweep; or by this one, when a database
        # outage swallowed the answer to its commit and the retry found the trial done.
        return store.ended_by_sweep(orphan.trial_id, sweep)
    return True


def _destroy_sandboxes(report: RecoveryReport, provider_factory: Callable, targets) -> None:
    batches = defaultdict(set)
    for orphan in targets:
        if not orphan.batch:
            continue
        if elsewhere(orphan):
            # Its sandboxes live on that job host: only it can reach them. They are removed
            # there (the next run's empty-account check, or `bench cleanup`).
            report.deferred.append(f"{orphan.provider} {orphan.batch} (on {orphan.job_host})")
            continue
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
        # Record on each trial recovery cut short in these batches (this sweep's, and those of
        # another sweep at once that deferred the batch to us) that its sandboxes are gone.
        confirmed = sorted(label for label, ok in verified.items() if ok)
        store.mark_cleanup_verified(store.cut_short_in(provider_slug, confirmed))


def elsewhere(orphan: Orphan) -> bool:
    """The orphan ran on another job host, for a provider whose sandboxes live on that host."""
    if not orphan.job_host or orphan.job_host == settings.JOB_HOST:
        return False
    try:
        return get_declaration(orphan.provider).shares_job_host
    except Exception:  # noqa: BLE001 - an unknown provider: try from here, as before
        return False


def _wait_gone(provider, sandbox_id: str, timeout_s: float = GONE_TIMEOUT_S) -> bool:
    return waiting.poll_until(lambda: provider.is_gone(sandbox_id), timeout_s, GONE_BACKOFF)


def _flatten(batches: dict) -> list[str]:
    return sorted({b for labels in batches.values() for b in labels})


# -- when recovery runs --------------------------------------------------------------------------

SCHEDULE_NAME = "boxbench orphan recovery"


def install_schedule(**_signal_kwargs) -> None:
    """The django-q2 Schedule that runs recovery every minute on this job host's cluster; setup
    installs it (post_migrate) and each qcluster when its workers start, so every job host
    sweeps (only a host can destroy the sandboxes of a provider that runs on it)."""
    from django_q.models import Schedule

    cluster = settings.Q_CLUSTER["cluster_name"]
    Schedule.objects.update_or_create(
        name=f"{SCHEDULE_NAME} ({cluster})",
        defaults={
            "func": "runner.recovery.scheduled_recovery",
            "schedule_type": Schedule.MINUTES,
            "minutes": 1,
            "repeats": -1,
            "cluster": cluster,
        },
    )


def startup_recovery(sleep: Callable[[float], None] = time.sleep) -> list[RecoveryReport]:
    """Recovery when a qcluster's workers start: a qcluster that starts after a crash finds the
    dead workers' trials at once if their heartbeats are already stale, and once more when the
    freshest of them must have gone stale (a heartbeat written just before the crash)."""
    runs.apply_pending_failures()
    reports = [recover_orphans()]
    sleep(settings.RUNNER_ORPHAN_AFTER_S + settings.RUNNER_HEARTBEAT_S)
    reports.append(recover_orphans())
    return reports


def on_worker_spawn(**_signal_kwargs) -> None:
    """django-q2's post_spawn: start `startup_recovery` in a thread, in one worker of this
    cluster (a file lock), so a restarted or reincarnated worker's predecessor is recovered."""
    # One lock per cluster (the workers' parent), so siblings run it once while a killed
    # predecessor that is still dying cannot hold it.
    lock_path = settings.VAR_DIR / f"recovery-{settings.JOB_HOST}-{os.getppid()}.lock"

    def run() -> None:
        try:
            # A fresh job host's state folder may not exist yet (only `run` makes it).
            lock_path.parent.mkdir(parents=True, exist_ok=True)
            with open(lock_path, "a") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return  # another worker of this host is on it
                install_schedule()
                for report in startup_recovery():
                    log.info("startup recovery: %s", report.summary())
            lock_path.unlink(missing_ok=True)
        except Exception:  # a failed sweep is retried by the schedule
            log.exception("startup recovery failed")
        finally:
            connections.close_all()

    threading.Thread(target=run, name="startup-recovery", daemon=True).start()
