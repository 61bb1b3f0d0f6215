"""Which checks of a run's audit failed, how each was resolved, and so which pairs of the run stay
out of publication. Read-only questions about stored audits and resolutions, asked by publishing
(the workflow), the leaderboard (which run feeds a pair) and the run pages alike.
"""

from __future__ import annotations

from django.db.models import Max

from boxbench.models import AuditResolution, ResolutionKind, Run, RunTransition

PUBLICATION_NOTES = ("published", "republished")  # the transitions that publish a run


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


def held_back(runs: list[Run]) -> dict:
    """{run id: [{"provider", "benchmark", "checks": [{"check", "why"}]}]}: the pairs of each
    run kept out of publication (one query for all runs).

    A failing pair stays out until resolved; a pair resolved as explained or by excluding its
    outliers publishes; a pair resolved by a re-run publishes from the re-run only, so the
    original run's numbers of that pair stay out for good. A resolution recorded after the run's
    last publication counts only once someone with publish_run publishes the run again
    (publishing.republish), so resolving alone never changes the public board.
    """
    ids = [run.id for run in runs]
    published = last_publications(ids)
    resolved = {
        (run_id, p, b, c): (kind, rerun, at)
        for run_id, p, b, c, kind, rerun, at in AuditResolution.objects.filter(
            run_id__in=ids
        ).values_list(
            "run_id", "provider__slug", "benchmark__slug", "check_name", "kind", "rerun_id", "at"
        )
    }
    found: dict = {}
    for run in runs:
        pairs: dict = {}
        for provider, benchmark, check in failing_checks(run.audit_report or {}):
            kind, rerun, at = resolved.get((run.id, provider, benchmark, check), (None,) * 3)
            if kind is None:
                why = f"{check} failed the audit and is not resolved"
            elif kind == ResolutionKind.RERUN:
                # Whenever it was recorded: this run's numbers of the pair never publish.
                why = (
                    f"{check} was resolved by re-running the pair (run {rerun}): "
                    "only the re-run publishes it"
                )
            elif run.id in published and at > published[run.id]:
                why = (
                    f"{check} was resolved after the run was published: it joins the board "
                    "once someone with publish_run publishes the run again"
                )
            else:
                continue
            entry = pairs.setdefault(
                (provider, benchmark), {"provider": provider, "benchmark": benchmark, "checks": []}
            )
            entry["checks"].append({"check": check, "why": why})
        found[run.id] = [pairs[key] for key in sorted(pairs)]
    return found


def last_publications(run_ids: list) -> dict:
    """{run id: when it was last published or republished} of the published runs among them."""
    found = dict(
        RunTransition.objects.filter(run_id__in=run_ids, note__in=PUBLICATION_NOTES)
        .values("run_id")
        .annotate(last=Max("at"))
        .values_list("run_id", "last")
    )
    for run_id, at in Run.objects.filter(id__in=run_ids, published=True).values_list(
        "id", "published_at"
    ):
        found[run_id] = max(found.get(run_id, at), at)
    return found


def resolutions(run: Run) -> list[dict]:
    """How each failed check of the run's audit was resolved, for its report page."""
    return resolutions_by_run([run]).get(run.id, [])


def resolutions_by_run(runs: list[Run]) -> dict:
    """{run id: resolutions(run)} of every run that has any, in one query."""
    found = AuditResolution.objects.filter(run_id__in=[r.id for r in runs]).select_related(
        "provider", "benchmark"
    )
    out: dict = {}
    for r in found.order_by("provider__slug", "benchmark__slug", "check_name"):
        out.setdefault(r.run_id, []).append(
            {
                "provider": r.provider.slug,
                "benchmark": r.benchmark.slug,
                "check_name": r.check_name,
                "kind": r.get_kind_display(),
                "note": r.note,
                "rerun": str(r.rerun_id) if r.rerun_id else None,
                "at": r.at.isoformat(timespec="minutes"),
            }
        )
    return out


def rerun_links(run: Run) -> list[dict]:
    """Each re-run of one of the run's held-back pairs (boxbench.reruns), oldest first, with
    what its own audit said of the pair: the run page links them, and their pages hold their
    audits."""
    return rerun_links_by_run([run]).get(run.id, [])


def rerun_links_by_run(runs: list[Run]) -> dict:
    """{run id: rerun_links(run)} of every run that has re-runs, in one query."""
    wanted = {str(run.id) for run in runs}
    found: dict = {}
    reruns = Run.objects.filter(manifest__has_key="rerun_of").order_by("created_at")
    for rerun in reruns:
        of = rerun.manifest.get("rerun_of") or {}
        if of.get("run") not in wanted:
            continue
        pair = (of.get("provider"), of.get("benchmark"))
        report = rerun.audit_report
        failed = [c for p, b, c in failing_checks(report or {}) if (p, b) == pair]
        if rerun.published:
            outcome = "passed its audit and is published: the board takes the pair from it"
        elif report is None:
            outcome = f"{rerun.status}, not audited"
        elif failed:
            outcome = f"failed its audit too ({', '.join(failed)}): the pair stays held back"
        else:
            outcome = "passed its audit, not yet published"
        found.setdefault(of["run"], []).append(
            {
                "run": str(rerun.id),
                "run_name": rerun.name,
                "provider": str(pair[0]),
                "benchmark": str(pair[1]),
                "outcome": outcome,
            }
        )
    return {run.id: found[str(run.id)] for run in runs if str(run.id) in found}
