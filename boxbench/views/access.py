"""Fetching what a page shows: one Aggregate row per page, or a run the visitor may see; and
whether the visitor may take a run action."""

import uuid

from django.http import Http404

from boxbench.models import Aggregate, Run, Scope, aggregate_key

# The run actions the dashboard offers, by permission codename (boxbench.<codename>).
CANCEL_RUN = "cancel_run"
VIEW_EVIDENCE = "view_evidence"


def may(request, codename: str) -> bool:
    """Whether the visitor may take the action named by a boxbench permission codename.

    Staff status stands in until the custom Run permissions exist; once they do, this becomes
    `request.user.has_perm(f"boxbench.{codename}")` and every view follows.
    """
    return bool(request.user.is_active and request.user.is_staff)


def aggregate(scope: Scope, *parts) -> dict:
    """The materialized data of one page; 404 when nothing is published for it."""
    data = Aggregate.objects.page(scope, *parts)
    if data is None:
        raise Http404(f"nothing published for {scope} {aggregate_key(*parts)!r}")
    return data


def visible_run(request, run_id: uuid.UUID) -> Run:
    """A published run for everyone; an unpublished one for staff only (others get a 404, so
    an outsider cannot learn that the run exists)."""
    run = Run.objects.filter(id=run_id).first()
    if run is None or not (run.published or request.user.is_staff):
        raise Http404("no such run")
    return run
