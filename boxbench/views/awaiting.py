"""Runs awaiting publication, for the pages that have no published result to show yet.

A newcomer's first run is often refused publication (a failing audit check on a busy machine), and
the leaderboards then stay empty. Staff see which runs wait and why; the list reads Run fields, the
stored audit report and the trial tally, never recomputes statistics, and costs two queries.
"""

from django.db.models import Exists, IntegerField, OuterRef, Subquery, Sum, Value
from django.db.models.functions import Coalesce

from boxbench import holdbacks
from boxbench.models import AuditResolution, Outcome, Run, Trial, TrialTally
from boxbench.views.cache import uncached

SHOWN = 10


def audit_verdict(report: dict | None, resolved: set[tuple[str, str, str]]) -> dict:
    """How far a run's audit stands from publication: failing and still unresolved checks."""
    if report is None:
        return {"audited": False, "failing": 0, "unresolved": 0}
    failing = holdbacks.failing_checks(report)
    unresolved = [key for key in failing if key not in resolved]
    return {"audited": True, "failing": len(failing), "unresolved": len(unresolved)}


def awaiting_runs(benchmark_ids: list[int] | None = None) -> list[dict]:
    """The latest unpublished runs (of these benchmarks, when given), newest first, each with its
    successful trials against the plan's target and its audit verdict."""
    # From the trial tally (kept by triggers), not a count over a run's million trials.
    successes = (
        TrialTally.objects.filter(run=OuterRef("pk"), outcome=Outcome.SUCCESS)
        .order_by()
        .values("run")
        .annotate(n=Sum("n"))
        .values("n")
    )
    runs = Run.objects.filter(published=False).annotate(
        successes=Coalesce(Subquery(successes, output_field=IntegerField()), Value(0))
    )
    if benchmark_ids is not None:
        # Every planned trial is a row from the start, so this also finds runs still queued.
        planned = Trial.objects.filter(run=OuterRef("pk"), benchmark_id__in=benchmark_ids)
        runs = runs.filter(Exists(planned))
    runs = list(runs.order_by("-created_at")[:SHOWN])
    failed = [run.id for run in runs if holdbacks.failing_checks(run.audit_report or {})]
    resolved: dict = {}
    if failed:
        found = AuditResolution.objects.filter(run_id__in=failed).values_list(
            "run_id", "provider__slug", "benchmark__slug", "check_name"
        )
        for run_id, *key in found:
            resolved.setdefault(run_id, set()).add(tuple(key))
    return [
        {
            "run": run,
            "successes": run.successes,
            "target": (manifest := run.typed_manifest).planned_successes(),
            "demo": manifest.demo is not None,
            "audit": audit_verdict(run.audit_report, resolved.get(run.id, set())),
        }
        for run in runs
    ]


def awaiting_uncached(context: dict, response):
    # The runs awaiting publication change without a publication.
    return uncached(response) if "awaiting" in context else response
