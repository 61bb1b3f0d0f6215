"""A run's report: manifest, progress, audit with resolutions, and (with view_private_evidence)
private evidence."""

from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode

from boxbench import permissions, publishing
from boxbench.models import (
    Aggregate,
    Benchmark,
    Evidence,
    Provider,
    ResolutionKind,
    RunStatus,
    Scope,
)
from boxbench.views.access import visible_run

EVIDENCE_SHOWN = 200
VERDICT_ORDER = {"fail": 0, "note": 1, "pass": 2, "unassessed": 3}


def run_page(request, run_id):
    run = visible_run(request, run_id)
    # A published run's counts and resolutions never change: read them from its aggregate
    # rather than count a million trials per request.
    stored = Aggregate.objects.page(Scope.RUN, run.id) if run.published else None
    counts = stored["progress"] if stored else publishing.progress(run)
    resolutions = stored["resolutions"] if stored else publishing.resolutions(run)
    resolved = {(r["provider"], r["benchmark"], r["check_name"]): r for r in resolutions}
    manifest = run.typed_manifest
    pairs = _pairs(run.audit_report or {}, resolved)
    context = {
        "run": run,
        "counts": counts,
        "total": sum(c["n"] for c in counts),
        "done": sum(c["n"] for c in counts if c["state"] == "done"),
        "pairs": pairs,
        "families": (run.audit_report or {}).get("families", {}),
        "resolutions": resolutions,
        "refusals": manifest.refusals,
        "demo": manifest.demo,
    }
    reviewer = permissions.may(request, permissions.AUDIT) or permissions.may(
        request, permissions.PUBLISH
    )
    if reviewer and not run.published:
        context["blockers"] = _blockers(run, pairs)
        context["ready"] = (
            run.status == RunStatus.COMPLETED and run.audit_report is not None
            and not context["blockers"]
        )  # fmt: skip
    if permissions.may(request, permissions.VIEW_EVIDENCE):
        context["evidence"] = list(
            Evidence.objects.filter(trial__run=run)
            .select_related("trial__provider", "trial__benchmark")
            .order_by("trial__seq", "kind")[:EVIDENCE_SHOWN]
        )
    return render(request, "boxbench/run.html", context)


def _pairs(report: dict, resolved: dict) -> list[dict]:
    """Audit pairs, failing first, each check with its resolution when one is recorded."""
    pairs = []
    for pair in report.get("pairs", []):
        checks = []
        for name, finding in pair.get("checks", {}).items():
            key = (pair["provider"], pair["benchmark"], name)
            checks.append({"name": name, **finding, "resolution": resolved.get(key)})
        pairs.append({**pair, "check_list": checks})
    pairs.sort(key=lambda p: (VERDICT_ORDER.get(p["verdict"], 9), p["provider"], p["benchmark"]))
    return pairs


def _blockers(run, pairs: list[dict]) -> list[dict]:
    """The failing checks that keep this run from publication, each with the admin address
    that records its resolution (the form arrives filled in with the run, pair and check)."""
    failing = [
        (pair, check)
        for pair in pairs
        for check in pair["check_list"]
        if check["verdict"] == "fail" and not check["resolution"]
    ]
    if not failing:
        return []
    provider_ids = dict(
        Provider.objects.filter(slug__in={p["provider"] for p, _ in failing}).values_list(
            "slug", "id"
        )
    )
    # The newest version of a slug, as `bench audit --resolve` picks it.
    benchmark_ids = dict(
        Benchmark.objects.filter(slug__in={p["benchmark"] for p, _ in failing})
        .order_by("slug", "version")
        .values_list("slug", "id")
    )
    add_url = reverse("admin:boxbench_auditresolution_add")
    blockers = []
    for pair, check in failing:
        kind = (
            ResolutionKind.OUTLIERS_EXCLUDED
            if check["name"] == "outliers"
            else ResolutionKind.EXPLAINED
        )
        initial = {
            "run": run.id,
            "provider": provider_ids.get(pair["provider"], ""),
            "benchmark": benchmark_ids.get(pair["benchmark"], ""),
            "check_name": check["name"],
            "kind": kind,
        }
        blockers.append(
            {
                "provider": pair["provider"],
                "benchmark": pair["benchmark"],
                "check": check,
                "admin_url": f"{add_url}?{urlencode(initial)}",
                "resolve": f"{pair['provider']}/{pair['benchmark']}/{check['name']}",
                "kind": kind,  # the resolution the admin form and the command suggest
            }
        )
    return blockers
