"""The audit and publish workflow: audit a run, resolve its failed checks, publish it pair by
pair (a failing pair stays out of publication until it is resolved).

Publishing materializes the leaderboard (boxbench.leaderboard). This module imports neither pandas
nor the statistics at load time, so the web process that reads it (admin, run pages) starts light:
the audit's data frame and the aggregates are built only when a run is audited or published.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from boxbench.holdbacks import failing_checks, last_publications
from boxbench.models import (
    AuditResolution,
    Benchmark,
    Outcome,
    Provider,
    ResolutionKind,
    Run,
    RunStatus,
    RunTransition,
    Trial,
)


class PublishRefused(Exception):
    """Publishing (or resolving) is not allowed yet; the message says what is in the way."""


def run_audit(run: Run, current_settings: bool = False) -> dict:
    """Audit the run's stored successful trials and store the report on the run.

    Re-auditing a run applies the settings its previous report recorded (every threshold and
    minimum), unless `current_settings`; the new report says where its settings came from
    (`settings_source`), which of them differ from today's defaults (`settings_changed`), and
    which the previous report did not record, so that today's default was applied
    (`settings_missing`).

    A published run's report is final: auditing it again is refused, since the report decides
    which of its pairs the public board shows.
    """
    if run.published:
        raise PublishRefused(_final(run, "auditing it again would overwrite its report"))
    from boxbench.audit_input import (
        audit_frame,
        probe_pairs,
    )  # pandas and scipy: loaded only to audit
    from stats import audit as stats_audit

    settings, source, missing = audit_settings(run, current_settings)
    frame = audit_frame(run)
    if len(frame):
        report = stats_audit.audit(frame, settings)
    else:
        report = stats_audit.report(settings, {}, [])
    report["pairs"] += probe_pairs(run)
    report["settings_source"] = source
    report["settings_changed"] = settings.differences(stats_audit.DEFAULT_SETTINGS)
    report["settings_missing"] = missing
    # Settings other than those fixed when the run was planned make a new, recorded audit.
    planned = _planned_settings(run)
    report["settings_depart_from_plan"] = (
        {
            name: {"used": change["used"], "planned": change["current"]}
            for name, change in settings.differences(planned[0]).items()
        }
        if planned is not None
        else None
    )
    audited_at = timezone.now()
    # Conditional, so a publication that committed while the audit ran is never overwritten.
    stored = Run.objects.filter(pk=run.pk, published=False).update(
        audit_report=report, audited_at=audited_at
    )
    if stored != 1:
        raise PublishRefused(_final(run, "auditing it again would overwrite its report"))
    run.audit_report, run.audited_at = report, audited_at
    return report


def _final(run: Run, why: str) -> str:
    return f"run {run.id} is published and final: {why}"


def audit_settings(run: Run, current_settings: bool = False):
    """(settings, source, names not recorded) for auditing `run`: those of its previous audit
    by boxbench when there is one, else the current defaults."""
    from stats import audit as stats_audit

    previous = run.audit_report
    if current_settings:
        return stats_audit.DEFAULT_SETTINGS, "current defaults", []
    if not isinstance(previous, dict):
        planned = _planned_settings(run)
        if planned is None:  # planned before settings were fixed, or imported without them
            return stats_audit.DEFAULT_SETTINGS, "current defaults", []
        return planned[0], "the run's manifest (fixed when it was planned)", planned[1]
    when = run.audited_at.isoformat(timespec="seconds") if run.audited_at else "unknown"
    recorded = previous.get("settings")
    if recorded is None:
        # A report from before settings were recorded: its q level and minimum successes are
        # known; everything else takes today's default, and the report says so.
        recorded = {
            k: previous[k] for k in ("q_level", "min_successes") if previous.get(k) is not None
        }
    try:
        settings, missing = stats_audit.AuditSettings.from_dict(recorded)
    except ValueError as exc:
        message = f"run {run.id}: its previous audit's settings are unusable: {exc}"
        raise PublishRefused(message) from None
    return settings, f"the previous audit of {when}", missing


def _planned_settings(run: Run):
    """(settings, names not recorded) the run's manifest fixed when it was planned, or None;
    a setting added since takes today's default, and the report says so (settings_missing)."""
    from stats import audit as stats_audit

    recorded = run.typed_manifest.audit_settings
    if recorded is None:
        return None
    try:
        return stats_audit.AuditSettings.from_dict(recorded)
    except ValueError as exc:
        message = f"run {run.id}: its manifest's audit settings are unusable: {exc}"
        raise PublishRefused(message) from None


def resolution_problem(run: Run, provider: str, benchmark: str, check: str, kind: str) -> str:
    """Why this resolution cannot be recorded, or "" when it can."""
    if (
        kind == ResolutionKind.OUTLIERS_EXCLUDED
        and Run.objects.filter(pk=run.pk, published=True).exists()
    ):
        return _final(run, "excluding outliers would rewrite its trials; resolve it otherwise")
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
    if resolution.is_final():
        raise PublishRefused(_final(run, f"its resolution of {resolution.check_name} stays"))
    problem = resolution_problem(
        run,
        resolution.provider.slug,
        resolution.benchmark.slug,
        resolution.check_name,
        resolution.kind,
    )
    if problem:
        raise PublishRefused(problem)
    same = AuditResolution.objects.filter(
        run=run,
        provider=resolution.provider,
        benchmark=resolution.benchmark,
        check_name=resolution.check_name,
    ).exclude(pk=resolution.pk)
    if same.exists():
        raise PublishRefused(
            f"{resolution.provider.slug} / {resolution.benchmark.slug} / "
            f"{resolution.check_name} of run {run.id} is already resolved"
        )
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
    # On a published run the pair waits for a republication (holdbacks.held_back): nothing
    # to rebuild.
    return excluded


def resolve_failing(
    run: Run, failures: list[tuple[str, str, str]], kind: str, note: str, rerun=None, actor=None
) -> int:
    """Record one resolution per (provider, benchmark, check), all or none (one transaction).

    Each is checked and saved by apply_resolution, so an outlier exclusion also marks its trials.
    Returns the number of trials excluded.
    """
    if not failures:
        raise PublishRefused(f"run {run.id} has no unresolved failing check to resolve")
    if not note.strip():
        raise PublishRefused("a resolution needs a note saying why")
    providers = {p.slug: p for p in Provider.objects.filter(slug__in={f[0] for f in failures})}
    # The newest version of a slug, as `bench audit --resolve` picks it.
    benchmarks = {}
    for b in Benchmark.objects.filter(slug__in={f[1] for f in failures}).order_by("version"):
        benchmarks[b.slug] = b
    excluded = 0
    with transaction.atomic():
        for provider, benchmark, check in failures:
            if provider not in providers or benchmark not in benchmarks:
                raise PublishRefused(f"unknown provider or benchmark in {provider}/{benchmark}")
            excluded += apply_resolution(
                AuditResolution(
                    run=run,
                    provider=providers[provider],
                    benchmark=benchmarks[benchmark],
                    check_name=check,
                    kind=kind,
                    note=note,
                    rerun=rerun,
                    actor=actor,
                )
            )
    return excluded


def publish(run: Run, actor=None) -> Run:
    """Publish a completed run pair by pair, then materialize.

    Passing pairs and pairs resolved as explained or by excluding outliers publish; a failing
    pair stays out until it is resolved (holdbacks.held_back). The publication is a row of the run's
    transitions (its status stays completed) naming the actor, the user who published (None
    from the command line). A published run with resolutions recorded since its publication is
    published again (`republish`); otherwise it is refused.
    """
    from boxbench.leaderboard.materialize import materialize  # pandas: loaded only to publish

    if run.published:
        return republish(run, actor)
    if run.status != RunStatus.COMPLETED:
        raise PublishRefused(f"run {run.id} is {run.status}; only a completed run is published")
    if (demo := run.typed_manifest.demo) is not None:
        # The note says what stood in for the providers: loopback fakes, or the null adapter.
        raise PublishRefused(f"run {run.id} is a demo run ({demo.note})")
    if not Trial.objects.filter(run=run, outcome=Outcome.SUCCESS).exists():
        raise PublishRefused(f"run {run.id} has no successful trial: there is nothing to publish")
    if run.audit_report is None:
        # Only boxbench's own audit of the stored trials counts (an imported file's report is
        # kept apart as imported_audit_report, for comparison).
        run_audit(run)
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


def resolved_since_publication(run: Run) -> int:
    """How many resolutions of this published run wait for a republication."""
    since = last_publications([run.id]).get(run.id)
    if since is None:
        return 0
    return AuditResolution.objects.filter(run=run, at__gt=since).count()


def republish(run: Run, actor=None) -> Run:
    """Admit the pairs of a published run resolved since its last publication: a transition
    "republished" naming the actor, then materialize. The run's trials and report are as
    published; its publication time (which orders runs on the board) stays."""
    from boxbench.leaderboard.materialize import materialize

    if not resolved_since_publication(run):
        raise PublishRefused(f"run {run.id} is already published, and nothing was resolved since")
    with transaction.atomic():
        RunTransition.objects.create(
            run=run,
            from_status=RunStatus.COMPLETED,
            to_status=RunStatus.COMPLETED,
            note="republished",
            actor=actor,
        )
        materialize()
    return run


def rematerialize() -> None:
    """Rebuild the leaderboards after a published run was deleted: from the runs still
    published, or empty when none is left."""
    from boxbench.leaderboard.materialize import materialize
    from boxbench.models import Aggregate

    if Run.objects.published().exists():
        materialize()
    else:
        Aggregate.objects.replace_all([])
