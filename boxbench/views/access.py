"""Fetching what a page shows: one Aggregate row per page, or a run the visitor may see."""

import uuid

from django.http import Http404

from boxbench import permissions
from boxbench.models import Aggregate, Run, Scope, aggregate_key


def aggregate(scope: Scope, *parts) -> dict:
    """The materialized data of one page; 404 when nothing is published for it."""
    data = Aggregate.objects.page(scope, *parts)
    if data is None:
        raise Http404(f"nothing published for {scope} {aggregate_key(*parts)!r}")
    return data


def visible_run(request, run_id: uuid.UUID) -> Run:
    """A published run for everyone; an unpublished one only with view_unpublished_run (others
    get a 404, so an outsider cannot learn that the run exists)."""
    run = Run.objects.filter(id=run_id).first()
    if run is None or not (run.published or permissions.may(request, permissions.VIEW_UNPUBLISHED)):
        raise Http404("no such run")
    return run
