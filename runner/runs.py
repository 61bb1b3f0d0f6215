"""A run's state changes after planning: failing it, finishing it once every chain is done (then
the audit task), cancelling it with its sandboxes, and what the admin and CLI show of its progress.
Every read and write goes through runner/store.py; each status change is a RunTransition row
(Run.transition).
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from pathlib import Path

from django.conf import settings
from django_q.tasks import async_task

from boxbench.models import Run, RunStatus, TrialState
from runner import adapters, store
from runner.labels import run_prefix
from runner.outcomes import Outcome

log = logging.getLogger(__name__)

AUDIT_TASK = "boxbench.tasks.audit_run"


def fail_run(run_id, note: str) -> bool:
    """Mark the run failed with `note`. When the database is away (after the store's own
    retries), the failure is kept in a file under BOXBENCH_VAR_DIR and recorded by
    `apply_pending_failures` once the database is back; False then."""
    try:
        _fail(run_id, note)
    except store.DB_DOWN as exc:
        path = _pending_dir() / f"{run_id}.json"
        path.write_text(json.dumps({"run": str(run_id), "note": note, "at": time.time()}))
        log.error("run %s failed but the database is away (%s): kept in %s", run_id, exc, path)
        return False
    return True


def _fail(run_id, note: str) -> None:
    run = store.get_run(run_id)
    if run.status in (RunStatus.PLANNED, RunStatus.RUNNING, RunStatus.CANCELLING):
        run.transition(RunStatus.FAILED, note=note[:2000])
        store.cancel_queued(run, f"the run failed: {note[:200]}")


def _pending_dir() -> Path:
    path = Path(settings.VAR_DIR) / "pending-failures"
    path.mkdir(parents=True, exist_ok=True)
    return path


def apply_pending_failures() -> list[str]:
    """Record the run failures that could not be written while the database was away (on this
    job host); returns the runs marked failed now. Run by recovery, each sweep."""
    applied = []
    for path in sorted(_pending_dir().glob("*.json")):
        try:
            pending = json.loads(path.read_text())
            _fail(pending["run"], f"{pending['note']} (recorded once the database was back)")
        except store.DB_DOWN:
            break  # still away: the next sweep tries again
        except (ValueError, KeyError, Run.DoesNotExist) as exc:
            log.error("cannot apply the pending run failure %s: %s", path, exc)
        else:
            applied.append(pending["run"])
        path.unlink(missing_ok=True)
    return applied


def finish_if_done(run_id, *, inline: bool = False) -> bool:
    """Move the run to its end state once every chain is done and no trial is queued or
    running, then enqueue its audit. A run without a single successful trial ends failed, with
    why its chains stopped: it never reads as a success.

    `inline` runs the audit task in this process (`bench run --inline`: no queue serves it).
    """
    with store.locked_run(run_id) as run:
        if run.status != RunStatus.CANCELLING and not store.chains_done(run):
            return False
        if run.status == RunStatus.RUNNING:
            unfinished = store.unfinished_trials(run)
            if unfinished:
                # A lost trial is ended by recovery (stale heartbeat), which calls this again.
                return False
            if not store.run_successes(run):
                notes = chain_notes(run)
                reason = "no trial succeeded" + (f": {'; '.join(notes)}" if notes else "")
                run.transition(RunStatus.FAILED, note=reason[:2000])
                return True
            run.transition(RunStatus.COMPLETED, note="every trial finished")
        elif run.status == RunStatus.CANCELLING:
            if store.has_running_trials(run):
                return False
            run.transition(RunStatus.CANCELLED, note="every running trial ended")
        else:
            return False
    store.record_chain_overlaps(run.pk)
    if run.status == RunStatus.COMPLETED:
        enqueue_audit(run, inline=inline)
    return True


def enqueue_audit(run: Run, *, inline: bool = False) -> None:
    """The statistical audit is a task of its own, named, so the runner never imports it."""
    # Only an explicit True: sync=False would override the queue's own sync setting (tests).
    options = {"sync": True} if inline else {}
    try:
        async_task(
            AUDIT_TASK, str(run.id), task_name=f"audit run {run.id}", group=str(run.id), **options
        )
    except Exception:  # the run's data stays; the audit can be re-run with `bench audit`
        log.exception("the audit of run %s failed; re-run it with `bench audit %s`", run.id, run.id)


def cancel_run(run: Run, actor=None) -> int:
    """Cancel a run: queued trials never start, and its sandboxes are cleaned up.

    Returns the number of sandboxes removed. Running trials end on their own and clean up their
    own sandboxes; the run becomes cancelled once none is running.
    """
    if run.status == RunStatus.PLANNED:
        run.transition(RunStatus.CANCELLED, note="cancelled before it started", actor=actor)
    elif run.status == RunStatus.RUNNING:
        run.transition(RunStatus.CANCELLING, note="cancel requested", actor=actor)
    store.cancel_queued(run, "the run was cancelled")
    removed = cleanup_run_sandboxes(run, list(run.typed_manifest.providers))
    if run.status == RunStatus.CANCELLING:
        finish_if_done(run.pk)
        run.refresh_from_db()
    return removed


def cleanup_run_sandboxes(run: Run, providers: list[str]) -> int:
    """Destroy the run's sandboxes that no running trial holds, on each provider."""
    prefix = run_prefix(run.id)
    busy = store.running_batches(run)
    removed = 0
    for slug in providers:
        try:
            provider = adapters.provider_factory(slug)
            live = provider.list_sandboxes()
        except Exception:
            log.exception("cannot list the sandboxes of %s to clean up run %s", slug, run.id)
            continue
        for sandbox in live:
            if sandbox.label.startswith(prefix) and sandbox.label not in busy:
                try:
                    provider.destroy(sandbox)
                except Exception:
                    log.exception("cannot destroy %s sandbox %s", slug, sandbox.id)
                    continue
                removed += 1
    return removed


def chain_notes(run: Run) -> list[str]:
    """Why a provider's chain stopped before or during the run, one sentence per chain."""
    notes = []
    for slug, chain in sorted(run.typed_manifest.chains.items()):
        for why in (chain.stopped, chain.error):
            if why:
                notes.append(f"{slug}: {why}")
    return notes


def progress(run: Run) -> list[dict]:
    """Per provider and benchmark: successes against the target, failures, what is queued, and
    the finished trials by outcome. The one count of a run's trials: the CLI, the admin, the run
    page (live, and materialized once published) and its badge all read it."""
    manifest = run.typed_manifest
    targets = {slug: b.trials_per_unit for slug, b in manifest.benchmarks.items()}
    units = {slug: len(b.units) or 1 for slug, b in manifest.benchmarks.items()}
    cells: dict = {}
    # A unit refused to one provider (a burst tier above its account's limit) has no target.
    refused_units = Counter((r.provider, r.benchmark) for r in manifest.refusals if r.unit)
    for provider, benchmark, state, outcome, n in store.trial_states(run):
        cell = cells.setdefault(
            (provider, benchmark),
            {
                "provider": provider,
                "benchmark": benchmark,
                "target": targets.get(benchmark, 0)
                * (units.get(benchmark, 1) - refused_units[provider, benchmark]),
                "done": 0,
                "failures": 0,
                "queued": 0,
                "running": 0,
                "cancelled": 0,
                "outcomes": {},
            },
        )
        if state == TrialState.DONE:
            cell["done" if outcome == Outcome.SUCCESS else "failures"] += n
            cell["outcomes"][outcome] = cell["outcomes"].get(outcome, 0) + n
        else:
            cell[state] += n
    for refusal in manifest.refusals:
        if refusal.unit and (refusal.provider, refusal.benchmark) in cells:
            cells[refusal.provider, refusal.benchmark].setdefault("refused_units", []).append(
                f"{refusal.unit}: {refusal.code} {refusal.label} ({refusal.missing})"
            )
            continue
        cells.setdefault(
            (refusal.provider, refusal.benchmark),
            {
                "provider": refusal.provider,
                "benchmark": refusal.benchmark,
                "refusal": f"{refusal.code} {refusal.label}",
                "missing": refusal.missing,
            },
        )
    return [cells[key] for key in sorted(cells)]
