"""Stable, linkable URLs; drill-down state (chosen unit, stages, provider, page) lives in the
query string."""

from django.contrib import admin
from django.urls import path

from boxbench.views import (
    api,
    badges,
    compare,
    control,
    downloads,
    feeds,
    indexes,
    ops,
    overview,
    pages,
    reliability,
    runs,
)
from boxbench.views.cache import per_publication as cached

urlpatterns = [
    path("", cached(overview.overview, client=("open",)), name="overview"),
    path("scores.csv", cached(downloads.overview_csv), name="overview-csv"),
    path("benchmarks/", cached(indexes.benchmarks), name="benchmarks"),
    path(
        "benchmarks/<slug:slug>/",
        cached(pages.benchmark, params=("unit", "view"), client=("stages",)),
        name="benchmark",
    ),
    path(
        "benchmarks/<slug:slug>.csv",
        cached(downloads.benchmark_csv, params=("view",)),
        name="benchmark-csv",
    ),
    path(
        "benchmarks/<slug:slug>/units/<slug:unit_slug>/",
        cached(pages.unit, params=("provider", "page"), client=("stages",)),
        name="unit",
    ),
    path(
        "benchmarks/<slug:slug>/units/<slug:unit_slug>.csv",
        cached(downloads.unit_csv, params=("view",)),
        name="unit-csv",
    ),
    path("providers/", cached(indexes.providers), name="providers"),
    path("providers/<slug:slug>/", cached(pages.provider), name="provider"),
    path("providers/<slug:slug>/feed.xml", cached(feeds.provider_feed), name="provider-feed"),
    path(
        "providers/<slug:slug>/<slug:benchmark>.svg",
        cached(badges.badge),
        name="provider-badge",
    ),
    path(
        "compare/",
        cached(compare.compare, params=("a", "b", "benchmark", "page")),
        name="compare",
    ),
    path("compare.csv", cached(compare.compare_csv, params=("a", "b")), name="compare-csv"),
    path("reliability/", cached(reliability.reliability), name="reliability"),
    path("reliability.csv", cached(reliability.reliability_csv), name="reliability-csv"),
    path("runs/", cached(indexes.runs, params=("page",)), name="runs"),
    path("runs/<uuid:run_id>/", cached(runs.run_page, params=("evidence",)), name="run"),
    path("runs/<uuid:run_id>/progress.json", cached(runs.progress_json), name="run-progress"),
    path("runs/<uuid:run_id>/cancel/", runs.cancel, name="run-cancel"),
    path("runs/<uuid:run_id>/resolve/", control.resolve, name="run-resolve"),
    path("runs/<uuid:run_id>/rerun/", control.rerun, name="run-rerun"),
    path("runs/<uuid:run_id>/publish/", control.publish, name="run-publish"),
    path("runs/<uuid:run_id>/raw.jsonl", downloads.raw_jsonl, name="run-raw-jsonl"),
    path("runs/<uuid:run_id>/raw.csv", downloads.raw_csv, name="run-raw-csv"),
    path(
        "methodology/",
        cached(pages.methodology, also=pages.methodology_version),
        name="methodology",
    ),
    path("api/v1/", cached(api.index), name="api-index"),
    path("api/v1/openapi.json", cached(api.openapi), name="api-openapi"),
    path("api/v1/docs/", cached(api.docs), name="api-docs"),
    path("api/v1/overview", cached(api.overview, params=("page",)), name="api-overview"),
    path(
        "api/v1/benchmarks/<slug:slug>",
        cached(api.benchmark, params=("view",)),
        name="api-benchmark",
    ),
    path(
        "api/v1/benchmarks/<slug:slug>/units/<slug:unit_slug>",
        cached(api.unit, params=("view",)),
        name="api-unit",
    ),
    path(
        "api/v1/benchmarks/<slug:slug>/history",
        cached(api.history, params=("unit",)),
        name="api-history",
    ),
    path("api/v1/providers/<slug:slug>", cached(api.provider), name="api-provider"),
    path("api/v1/reliability", cached(api.reliability), name="api-reliability"),
    path(
        "api/v1/compare",
        cached(api.compare, params=("a", "b", "benchmark", "page")),
        name="api-compare",
    ),
    path("api/v1/runs/<uuid:run_id>/manifest", cached(api.run_manifest), name="api-manifest"),
    path("api/v1/runs/<uuid:run_id>/audit", cached(api.run_audit), name="api-audit"),
    path("admin/", admin.site.urls),
    path("metrics", ops.metrics_view, name="metrics"),
    path("healthz", ops.healthz, name="healthz"),
]

handler404 = "boxbench.views.errors.not_found"
