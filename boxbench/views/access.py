"""Fetching what a page shows: one Aggregate row per page, or a run the visitor may see."""

import uuid

from django.http import Http404

from boxbench import permissions
from boxbench.leaderboard.burst import default_unit
from boxbench.models import Aggregate, Run, Scope, aggregate_key
from runner.manifest import public_manifest


def aggregate(scope: Scope, *parts) -> dict:
    """The materialized data of one page; 404 when nothing is published for it."""
    data = Aggregate.objects.page(scope, *parts)
    if data is None:
        raise Http404(f"nothing published for {scope} {aggregate_key(*parts)!r}")
    return data


VIEWS = ("time", "cost")


def chosen_view(request, data: dict) -> str:
    """The view a benchmark page or CSV shows (?view=, Time by default); a view the benchmark
    does not have is a 404 that names it."""
    view = request.GET.get("view") or "time"
    if view not in VIEWS:
        raise Http404(f"view must be one of {', '.join(VIEWS)}, not {view!r}")
    if view == "cost" and not data.get("cost_view"):
        raise Http404(f"benchmark {data.get('benchmark')!r} has no Cost view (workloads only)")
    return view


def visible_run(request, run_id: uuid.UUID) -> Run:
    """A published run for everyone; an unpublished one only with view_unpublished_run (others
    get a 404, so an outsider cannot learn that the run exists)."""
    run = Run.objects.filter(id=run_id).first()
    if run is None or not (run.published or permissions.may(request, permissions.VIEW_UNPUBLISHED)):
        raise Http404("no such run")
    return run


def shown_manifest(request, run: Run) -> dict:
    """The run's manifest as this reader may see it: whole with view_private_evidence, otherwise
    its public projection (runner.manifest.public_manifest: no other accounts' sandbox ids, no
    backends' error texts)."""
    if permissions.may(request, permissions.VIEW_EVIDENCE):
        return run.typed_manifest.to_json()
    return public_manifest(run.typed_manifest.to_json())


def single_unit(summary: dict) -> dict | None:
    """The one unit page of a single-unit benchmark, or the unit that alone is its result (a
    burst's default tier): its median's interval goes with the All view's row. None for a
    multi-unit workload."""
    units = [u["slug"] for u in summary.get("units", [])]
    alone = default_unit(summary.get("benchmark", ""), units)  # a burst's default tier
    if summary.get("multi_unit") or (alone is None and len(units) != 1):
        return None
    return Aggregate.objects.page(Scope.UNIT, summary["benchmark"], alone or units[0])
