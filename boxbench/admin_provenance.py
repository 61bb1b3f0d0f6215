"""Provenance stays as recorded: in the admin, the records of a run that has ended (its trials,
their measurements and evidence, its transitions) can be viewed but not edited, added or deleted
one by one. A whole run can still be deleted by those with the permission, after Django's
confirmation page; each deletion is logged and kept in the admin's history (LogEntry), which
does not reference the run and so outlives it.
"""

from __future__ import annotations

import logging

from boxbench import publishing
from boxbench.models import (
    AuditResolution,
    Evidence,
    MeasurementName,
    Run,
    RunStatus,
    RunTransition,
    Trial,
)

log = logging.getLogger("boxbench.admin")

ENDED = (RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.FAILED)


def run_of(obj) -> Run | None:
    """The run a record belongs to."""
    if isinstance(obj, Run):
        return obj
    if isinstance(obj, Trial | RunTransition | MeasurementName):
        return obj.run
    if isinstance(obj, Evidence):
        return obj.trial.run
    return None


def frozen(obj) -> bool:
    """Whether the record belongs to a run that has ended (its provenance is final)."""
    run = run_of(obj) if obj is not None else None
    return run is not None and run.status in ENDED


class FrozenOnceEnded:
    """For a run's records and their inlines: read-only once the run has ended, and never
    deleted piecemeal (delete the whole run instead). Inlines receive the parent as `obj`."""

    def has_change_permission(self, request, obj=None):
        return not frozen(obj) and super().has_change_permission(request, obj)

    def has_add_permission(self, request, *args):
        parent = args[0] if args else None
        return not frozen(parent) and super().has_add_permission(request, *args)

    def has_delete_permission(self, request, obj=None):
        return False


class RecordedRunDeletion:
    """For the run admin: a deleted run is logged with who deleted it and what it held, and a
    published one leaves the leaderboards (they are materialized again without it)."""

    def get_deleted_objects(self, objs, request):
        """What the confirmation page lists: the runs and how many records go with them.

        Django would list every trial, measurement and evidence row (hundreds of thousands on a
        large run) and refuse because those admins never delete piecemeal; the run's own delete
        permission is what decides.
        """
        runs = list(objs)
        ids = [run.id for run in runs]
        counts = {
            "runs": len(runs),
            "trials": Trial.objects.filter(run_id__in=ids).count(),
            "measurement names": MeasurementName.objects.filter(run_id__in=ids).count(),
            "evidence records": Evidence.objects.filter(trial__run_id__in=ids).count(),
            "transitions": RunTransition.objects.filter(run_id__in=ids).count(),
            "audit resolutions": AuditResolution.objects.filter(run_id__in=ids).count(),
        }
        allowed = all(self.has_delete_permission(request, run) for run in runs)
        perms_needed = set() if allowed else {"run"}
        return [f"Run: {run.name} ({run.id})" for run in runs], counts, perms_needed, []

    def delete_model(self, request, obj):
        self._deleting([obj], request)
        super().delete_model(request, obj)
        self._after([obj])

    def delete_queryset(self, request, queryset):
        runs = list(queryset)
        self._deleting(runs, request)
        super().delete_queryset(request, queryset)
        self._after(runs)

    def _deleting(self, runs, request):
        for run in runs:
            log.warning(
                "run %s (%s) deleted by %s: status %s, published %s, %d trials",
                run.id,
                run.name,
                request.user.get_username(),
                run.status,
                run.published,
                run.trials.count(),
            )

    def _after(self, runs):
        if any(run.published for run in runs):
            publishing.rematerialize()
