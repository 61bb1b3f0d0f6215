"""The narrow interface through which the runner writes trials.

A trial is claimed by a conditional UPDATE (queued -> running) that must change exactly one row, so
a task delivered twice runs it once. A finished trial is written with its measurements and
evidence in one transaction, and only while it is still running: no half-written trial.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from boxbench.models import Evidence, Measurement, Trial, TrialState
from runner.lifecycle import TrialResult


class TrialNotRunning(Exception):
    pass


def claim_trial(trial_id, job_host: str) -> bool:
    """Move a queued trial to running for this job host; False if anyone else got it first."""
    changed = Trial.objects.filter(pk=trial_id, state=TrialState.QUEUED).update(
        state=TrialState.RUNNING, job_host=job_host, started_at=timezone.now()
    )
    return changed == 1


def save_result(trial_id, result: TrialResult) -> Trial:
    """Write a finished trial; raises TrialNotRunning when it was not claimed."""
    with transaction.atomic():
        changed = Trial.objects.filter(pk=trial_id, state=TrialState.RUNNING).update(
            state=TrialState.DONE,
            outcome=result.outcome,
            owner=result.owner,
            cause=result.cause[:4000],
            started_at=result.started_at,
            ended_at=result.ended_at,
            placement=result.placement,
            host_load=result.host_load,
            cost_usd=result.cost_usd,
        )
        if changed != 1:
            raise TrialNotRunning(f"trial {trial_id} is not running: its result was not stored")
        Measurement.objects.bulk_create(
            Measurement(
                trial_id=trial_id,
                kind=m.kind,
                name=m.name,
                value=m.value,
                unit=m.unit,
                clock=m.clock,
                clock_gate=m.gate,
            )
            for m in result.measurements
        )
        lifecycle = {
            "held": result.held,
            "cleanup_verified": result.cleanup_verified,
            "cut_short": result.cut_short,
            # An unknown outcome (cut short) stops refilling; an unknown owner alone does not.
            "outcome_unknown": result.cut_short,
        }
        Evidence.objects.bulk_create(
            [
                *(
                    Evidence(trial_id=trial_id, kind=e.kind, at=e.at, data=e.data)
                    for e in result.evidence
                ),
                Evidence(trial_id=trial_id, kind="lifecycle", data=lifecycle),
            ]
        )
    return Trial.objects.get(pk=trial_id)


def cancel_queued(run, reason: str, **filters) -> int:
    """Mark queued trials cancelled (they never ran), with the reason as their cause."""
    return Trial.objects.filter(run=run, state=TrialState.QUEUED, **filters).update(
        state=TrialState.CANCELLED, cause=reason
    )
