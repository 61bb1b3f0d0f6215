"""The versioned JSON API (/api/v1/, docs/api.md): each public page's materialized data and its
CSV rows, read from the Aggregate rows and cached per publication like the pages; who may see a
run is decided as on its page. The answers' types and the OpenAPI description are in
boxbench.api_schema."""

import msgspec
from django.http import Http404, HttpResponse
from django.shortcuts import render

from boxbench import api_docs, api_schema, holdbacks
from boxbench.leaderboard import slices
from boxbench.leaderboard.shapes import PublicUnitPage, RunPage
from boxbench.models import Aggregate, Scope
from boxbench.views import canonical, score_tables, tables
from boxbench.views import reliability as reliability_view
from boxbench.views.access import (
    aggregate,
    chosen_view,
    shown_manifest,
    single_unit,
    visible_run,
)
from boxbench.views.cache import publication_version, uncached
from boxbench.views.compare import chosen_pair, chosen_slice

PUBLIC_UNIT_KEYS = PublicUnitPage.__required_keys__ | PublicUnitPage.__optional_keys__
EXCLUDED_ID_SHOWN = 8  # characters of an excluded trial's id, as the run page shows them


def _answer(kind: str, **fields) -> HttpResponse:
    body = {
        "api_version": api_schema.API_VERSION,
        "publication": publication_version(),
        "kind": kind,
        **fields,
    }
    return HttpResponse(msgspec.json.encode(body), content_type="application/json")


def _table(table: tables.Table) -> dict:
    return {"columns": table.columns, "rows": table.rows}


def index(request):
    return _answer(
        "index",
        endpoints=api_schema.index_endpoints(),
        openapi=api_schema.OPENAPI_PATH,
        docs=api_schema.DOCS_PATH,
    )


def openapi(request):
    return HttpResponse(msgspec.json.encode(api_schema.openapi()), content_type="application/json")


def docs(request):
    """The OpenAPI description as a page for people, rendered here (no outside script)."""
    reference = api_docs.reference(api_schema.openapi())
    return render(request, "boxbench/api_docs.html", {"api": reference})


def _pagination(request, number: int, pages: int, per_page: int) -> api_schema.Pagination:
    def link(wanted: int) -> str | None:
        if not 1 <= wanted <= pages:
            return None
        return canonical.changed_address(request, page=str(wanted) if wanted > 1 else None)

    return {
        "page": number,
        "pages": pages,
        "per_page": per_page,
        "next": link(number + 1),
        "previous": link(number - 1),
    }


def overview(request):
    number = canonical.whole_number(request, "page")
    try:
        data, pages = slices.cut_overview(aggregate(Scope.OVERVIEW), number)
    except slices.NotOnPage as missing:
        raise Http404(str(missing)) from None
    return _answer(
        "overview",
        pagination=_pagination(request, number, pages, slices.OVERVIEW_UNITS_PER_PAGE),
        page=data,
        table=_table(score_tables.score_table(data)),
    )


def benchmark(request, slug):
    data = aggregate(Scope.BENCHMARK, slug)
    view = chosen_view(request, data)
    if view == "cost":
        table = tables.benchmark_cost_table(data)
    else:
        table = tables.benchmark_table(data, single_unit(data))
    return _answer("benchmark", view=view, page=data, table=_table(table))


def unit(request, slug, unit_slug):
    data = aggregate(Scope.UNIT, slug, unit_slug)
    view = chosen_view(request, data)
    table = tables.unit_cost_table(data) if view == "cost" else tables.unit_table(data)
    page = {key: value for key, value in data.items() if key in PUBLIC_UNIT_KEYS}
    return _answer("unit", view=view, page=page, table=_table(table))


def history(request, slug):
    try:
        page = slices.cut_history(aggregate(Scope.HISTORY, slug), request.GET.get("unit", ""))
    except slices.NotOnPage as missing:
        raise Http404(str(missing)) from None
    return _answer("history", page=page)


def provider(request, slug):
    return _answer("provider", page=aggregate(Scope.PROVIDER, slug))


def reliability(request):
    data = aggregate(Scope.RELIABILITY)
    table = reliability_view.reliability_table(data)
    return _answer("reliability", page=data, table=_table(table))


def compare(request):
    pair = chosen_pair(request)
    if pair is None:
        raise Http404("a comparison needs two providers: ?a=<slug>&b=<slug>")
    data = chosen_slice(request, pair)
    per_page = slices.UNITS_PER_PAGE if data["benchmark"] else slices.UNITS_SHOWN
    return _answer(
        "compare",
        pagination=_pagination(request, data["page"], data["pages"], per_page),
        page=data,
        table=_table(tables.compare_table(data)),
    )


def _run_answer(response: HttpResponse, published: bool) -> HttpResponse:
    # An unpublished run changes as it runs and is audited; a published one only by publication.
    return response if published else uncached(response)


def run_manifest(request, run_id):
    run = visible_run(request, run_id)
    response = _answer(
        "manifest", run=str(run.id), published=run.published, manifest=shown_manifest(request, run)
    )
    return _run_answer(response, run.published)


def run_audit(request, run_id):
    run = visible_run(request, run_id)
    stored: RunPage | None = Aggregate.objects.page(Scope.RUN, run.id) if run.published else None
    resolutions = stored["resolutions"] if stored else holdbacks.resolutions(run)
    held = stored["held_back"] if stored else holdbacks.held_back([run])[run.id]
    response = _answer(
        "audit",
        run=str(run.id),
        published=run.published,
        audit_report=_as_shown(run.audit_report),
        resolutions=resolutions,
        held_back=held,
    )
    return _run_answer(response, run.published)


def _as_shown(report: dict | None) -> dict | None:
    """The audit report as the run page shows it: an excluded trial by the start of its id."""
    if not report:
        return report
    pairs = [
        {
            **pair,
            "excluded_trials": [
                {**t, "trial_id": str(t.get("trial_id", ""))[:EXCLUDED_ID_SHOWN]}
                for t in pair.get("excluded_trials", [])
            ],
        }
        for pair in report.get("pairs", [])
    ]
    return {**report, "pairs": pairs}
