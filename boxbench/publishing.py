"""The audit and publish workflow: audit a run, resolve its failed checks, publish it.

Publishing materializes the leaderboard (boxbench.leaderboard). This module imports neither pandas
nor the statistics at load time, so the web process that reads it (admin, run pages) starts light:
the audit's data frame and the aggregates are built only when a run is audited or published.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from boxbench.models import (
    AuditResolution,
    Outcome,
    ResolutionKind,
    Run,
    RunStatus,
    RunTransition,
    Trial,
)


class PublishRefused(Exception):
    """Publishing (or resolving) is not allowed yet; the message says what is in the way."""


def run_audit(run: Run) -> dict:
    """Audit the run's successful trials and store the report on the run."""
    from boxbench.audit_input import audit_frame  # pandas and scipy: loaded only to audit
    from stats import audit as stats_audit

    frame = audit_frame(run)
    report = stats_audit.audit(frame) if len(frame) else _empty_report(stats_audit)
    run.audit_report = report
    run.audited_at = timezone.now()
    run.save(update_fields=["audit_report", "audited_at"])
    return report


def _empty_report(stats_audit) -> dict:
    """The report of a run without a successful trial, with the audit's own thresholds."""
    return {
        "schema_version": 1,
        "q_level": stats_audit.Q_LEVEL,
        "min_successes": stats_audit.MIN_SUCCESSES,
        "families": {},
        "pairs": [],
    }


def failing_checks(report: dict) -> list[tuple[str, str, str]]:
    """(provider, benchmark, check) of every failed check in the report."""
    found = []
    for pair in report.get("pairs", []):
        for check, finding in pair.get("checks", {}).items():
            if finding.get("verdict") == "fail":
                found.append((pair["provider"], pair["benchmark"], check))
    return found


def unresolved_failures(run: Run) -> list[tuple[str, str, str]]:
    resolved = set(
        AuditResolution.objects.filter(run=run).values_list(
            "provider__slug", "benchmark__slug", "check_name"
        )
    )
    return [f for f in failing_checks(run.audit_report or {}) if f not in resolved]


def resolution_problem(run: Run, provider: str, benchmark: str, check: str, kind: str) -> str:
    """Why this resolution cannot be recorded, or "" when it can."""
    if not run.audit_report:
        return f"run {run.id} has no audit report yet: run `bench audit` first"
    if (provider, benchmark, check) not in failing_checks(run.audit_report):
        return f"{provider} / {benchmark} / {check} did not fail the audit of run {run.id}"
    if kind == ResolutionKind.OUTLIERS_EXCLUDED and check != "outliers":
        return "only the outliers check is resolved by excluding outliers"
    if kind not in ResolutionKind.values:
        return f"{kind!r} is not one of {', '.join(ResolutionKind.values)}"
    return ""


def apply_resolution(resolution: AuditResolution) -> int:
    """Save a resolution; an outlier exclusion also marks the audit's excluded trials excluded.

    Returns the number of trials excluded. All or nothing: one transaction.
    """
    run = resolution.run
    problem = resolution_problem(
        run, resolution.provider.slug, resolution.benchmark.slug, resolution.check_name,
        resolution.kind,
    )  # fmt: skip
    if problem:
        raise PublishRefused(problem)
    excluded = 0
    with transaction.atomic():
        resolution.save()
        if resolution.kind == ResolutionKind.OUTLIERS_EXCLUDED:
            for pair in run.audit_report["pairs"]:
                if (pair["provider"], pair["benchmark"]) != (
                    resolution.provider.slug,
                    resolution.benchmark.slug,
                ):
                    continue
                for item in pair.get("excluded_trials", []):
                    excluded += Trial.objects.filter(
                        run=run, id=item["trial_id"], outcome=Outcome.SUCCESS
                    ).update(
                        outcome=Outcome.EXCLUDED,
                        cause=f"Excluded by the audit's outlier rule: {item['reason']} "
                        f"(value {item['value']:g}).",
                    )
    return excluded


def publish(run: Run, actor=None) -> Run:
    """Publish a completed run whose audit has no unresolved failure, then materialize.

    The publication is a row of the run's transitions (its status stays completed) naming the
    actor, the user who published (None from the command line).
    """
    from boxbench.leaderboard import materialize  # pandas: loaded only to publish

    if run.published:
        raise PublishRefused(f"run {run.id} is already published")
    if run.status != RunStatus.COMPLETED:
        raise PublishRefused(f"run {run.id} is {run.status}; only a completed run is published")
    if run.typed_manifest.demo is not None:
        raise PublishRefused(f"run {run.id} is a demo run against loopback fakes: never published")
    if run.audit_report is None:
        run_audit(run)
    unresolved = unresolved_failures(run)
    if unresolved:
        names = ", ".join(f"{p} / {b} / {c}" for p, b, c in unresolved)
        raise PublishRefused(
            f"run {run.id} has unresolved audit failures: {names}. Resolve each (outliers "
            "excluded, effect explained, or pair re-run) before publishing."
        )
    with transaction.atomic():
        changed = Run.objects.filter(pk=run.pk, published=False).update(
            published=True, published_at=timezone.now()
        )
        if changed != 1:
            raise PublishRefused(f"run {run.id} was published by someone else meanwhile")
        RunTransition.objects.create(
            run=run,
            from_status=RunStatus.COMPLETED,
            to_status=RunStatus.COMPLETED,
            note="published",
            actor=actor,
        )
        run.refresh_from_db()
        materialize()
    return run


def progress(run: Run) -> list[dict]:
    """Trial counts by state and outcome (live while running; materialized once published)."""
    return list(
        Trial.objects.filter(run=run)
        .values("state", "outcome")
        .annotate(n=Count("id"))
        .order_by("state", "outcome")
    )


def resolutions(run: Run) -> list[dict]:
    """How each failed check of the run's audit was resolved, for its report page."""
    found = AuditResolution.objects.filter(run=run).select_related("provider", "benchmark")
    return [
        {
            "provider": r.provider.slug,
            "benchmark": r.benchmark.slug,
            "check_name": r.check_name,
            "kind": r.get_kind_display(),
            "note": r.note,
            "rerun": str(r.rerun_id) if r.rerun_id else None,
            "at": r.at.isoformat(timespec="minutes"),
        }
        for r in found.order_by("provider__slug", "benchmark__slug", "check_name")
    ]
