"""A run's report: manifest, progress (live while it runs), audit with resolutions, and (with
view_private_evidence) private evidence, a page at a time; its progress as JSON, and cancelling
it."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from boxbench import control_room, holdbacks, live, permissions, publishing, reruns
from boxbench.admin_forms import PAIR_KINDS
from boxbench.leaderboard.names import pair_names
from boxbench.leaderboard.shapes import RunPage
from boxbench.models import (
    Aggregate,
    Benchmark,
    Evidence,
    Provider,
    ResolutionKind,
    Run,
    RunStatus,
    Scope,
    Trial,
)
from boxbench.permissions import CANCEL, VIEW_EVIDENCE, may
from boxbench.views import canonical
from boxbench.views.access import shown_manifest, visible_run
from boxbench.views.cache import uncached
from runner import runs

EVIDENCE_PER_PAGE = 25
VERDICT_ORDER = {"fail": 0, "note": 1, "pass": 2, "unassessed": 3}


def run_page(request, run_id):
    run = visible_run(request, run_id)
    if "evidence" in request.GET and not may(request, VIEW_EVIDENCE):
        return canonical.redirect(request, evidence=None)  # no evidence pages for this reader
    # A published run's counts and resolutions never change: read them from its aggregate
    # rather than count a million trials per request.
    stored: RunPage | None = Aggregate.objects.page(Scope.RUN, run.id) if run.published else None
    # Runs materialized before progress became one function have no "cells": count them anew.
    cells = stored["cells"] if stored and "cells" in stored else runs.progress(run)
    measured = [c for c in cells if "refusal" not in c]
    resolutions = stored["resolutions"] if stored else holdbacks.resolutions(run)
    held = stored.get("held_back", []) if stored else holdbacks.held_back([run])[run.id]
    rerun_links = stored.get("reruns", []) if stored else holdbacks.rerun_links(run)
    resolved = {(r["provider"], r["benchmark"], r["check_name"]): r for r in resolutions}
    manifest = run.typed_manifest
    pairs = _pairs(run.audit_report or {}, resolved)
    openable = _openable(
        request,
        [r["run"] for r in rerun_links]
        + [r["rerun"] for r in resolutions if r["rerun"]]
        + ([manifest.rerun_of.run] if manifest.rerun_of else []),
    )
    rerun_links = [{**r, "link": r["run"] in openable} for r in rerun_links]
    resolutions = [{**r, "link": r["rerun"] in openable} for r in resolutions]
    context = {
        "run": run,
        "badge": live.badge(run, live.failed_trials(cells)),
        "cells": measured,
        "total": sum(c["done"] + c["failures"] + c["queued"] + c["running"] for c in measured),
        "done": sum(c["done"] + c["failures"] for c in measured),
        "pairs": pairs,
        "families": (run.audit_report or {}).get("families", {}),
        "resolutions": resolutions,
        "held_back": held,
        "reruns": rerun_links,
        "refusals": manifest.refusals,
        "names": stored["names"] if stored and "names" in stored else pair_names(),
        "demo": manifest.demo,
        "rerun_of": manifest.rerun_of,
        "rerun_of_link": bool(manifest.rerun_of) and manifest.rerun_of.run in openable,
        "schedule": _schedule(manifest, pairs),
        "manifest": shown_manifest(request, run),
    }
    reviewer = permissions.may(request, permissions.AUDIT) or permissions.may(
        request, permissions.PUBLISH
    )
    if reviewer and not run.published:
        context["blockers"] = _blockers(run, pairs)
        context["ready"] = run.status == RunStatus.COMPLETED and run.audit_report is not None
    if reviewer or permissions.may_rerun(request):
        context["control"] = _control(request, run, cells)
    if not run.published:
        context["live"] = live.snapshot(run, cells, timezone.now())
        context["may_cancel"] = run.status in live.CANCELLABLE and may(request, CANCEL)
    if may(request, VIEW_EVIDENCE):
        context["evidence"] = _evidence_page(request, run)
    response = render(request, "boxbench/run.html", context)
    # An unpublished run changes as it runs and is audited; a published one only by publication,
    # but its control room (resolutions, re-runs) with every change.
    return response if run.published and "control" not in context else uncached(response)


def _control(request, run, cells) -> dict:
    """The control room's rows and what this staff member may do from it. Resolutions and
    what they hold back are read live, not from the publication's page: a resolution recorded
    since shows at once."""
    resolved = {
        (r["provider"], r["benchmark"], r["check_name"]): r for r in holdbacks.resolutions(run)
    }
    pairs = _pairs(run.audit_report or {}, resolved)
    held = holdbacks.held_back([run])[run.id]
    republish = run.published and publishing.resolved_since_publication(run) > 0
    return {
        "rows": control_room.audit_rows(run, pairs, cells, held),
        "may_resolve": may(request, permissions.AUDIT),
        "kinds": PAIR_KINDS,
        "may_publish": may(request, permissions.PUBLISH)
        and run.status == RunStatus.COMPLETED
        and (not run.published or republish),
        "republish": republish,
        "rerunnable": ["/".join(pair) for pair in reruns.pairs_to_rerun(run)]
        if permissions.may_rerun(request) and run.status == RunStatus.COMPLETED
        else [],
    }


def _openable(request, run_ids: list[str]) -> set[str]:
    """The runs among `run_ids` this reader may open: a visitor only the published ones (an
    unpublished run's page is a 404 for them, so it is named, never linked)."""
    if may(request, permissions.VIEW_UNPUBLISHED):
        return set(run_ids)
    published = Run.objects.filter(id__in=set(run_ids), published=True).values_list("id", flat=True)
    return {str(run_id) for run_id in published}


def _evidence_page(request, run):
    """One page of the run's private evidence, each row with its trial's position in the run
    (1..N in execution order) rather than its raw seq."""
    found = (
        Evidence.objects.filter(trial__run=run)
        .select_related("trial__provider", "trial__benchmark")
        .order_by("trial__seq", "kind", "id")
    )
    pages = Paginator(found, EVIDENCE_PER_PAGE)
    number = canonical.whole_number(request, "evidence")
    if number > max(pages.num_pages, 1):
        raise Http404(f"no evidence page {number}")
    page = pages.page(number)
    page.object_list = list(page.object_list)
    seqs = [e.trial.seq for e in page.object_list if e.trial.seq is not None]
    positions = Trial.objects.positions(run.id, seqs)
    for evidence in page.object_list:
        evidence.position = positions.get(evidence.trial.seq)
    return page


def progress_json(request, run_id):
    """The run's progress for the page's poll (static/boxbench/run.js). A published run's is
    read from its aggregate, written at publication, and kept in the page cache (it no longer
    changes): counting a large run's trials takes seconds, and a visitor could ask in a loop."""
    run = visible_run(request, run_id)
    stored: RunPage | None = Aggregate.objects.page(Scope.RUN, run.id) if run.published else None
    cells = stored["cells"] if stored and "cells" in stored else runs.progress(run)
    response = JsonResponse(live.snapshot(run, cells, timezone.now()))
    if run.published:
        return response
    add_never_cache_headers(response)  # it changes from one poll to the next
    return uncached(response)


@require_POST
def cancel(request, run_id):
    """Cancel a planned or running run: its queued trials never start, its sandboxes go."""
    run = visible_run(request, run_id)
    if not may(request, CANCEL):
        raise PermissionDenied("cancelling a run needs the cancel_run permission")
    if run.status not in live.CANCELLABLE:
        messages.warning(
            request, f"{run.name} is {run.get_status_display().lower()}: nothing to cancel."
        )
    else:
        removed = runs.cancel_run(run, actor=request.user)
        messages.success(
            request,
            f"{run.name}: {run.get_status_display().lower()}, {removed} sandbox(es) removed.",
        )
    return redirect("run", run.id)


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


def _schedule(manifest, pairs: list[dict]) -> dict:
    """What the page discloses of the schedule, so a reader can see that no provider met a
    fixed battery: the seed, each chain's shuffled (benchmark, round) order, and per pair the
    audit's first round against the later ones, with both groups' medians."""
    chains = [
        {
            "provider": provider,
            "steps": [{"benchmark": b, "round": r} for b, r in chain.order],
            "stopped": chain.stopped or chain.error,
        }
        for provider, chain in sorted(manifest.chains.items())
    ]
    first_round = [
        {"provider": p["provider"], "benchmark": p["benchmark"], **p["checks"]["first_round"]}
        for p in sorted(pairs, key=lambda p: (p["provider"], p["benchmark"]))
        if "first_round" in p.get("checks", {})
    ]
    failing = sum(1 for f in first_round if f.get("verdict") == "fail")
    return {
        "seed": manifest.seed,
        "chains": chains,
        "first_round": first_round,
        "first_round_failing": failing,
    }


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
