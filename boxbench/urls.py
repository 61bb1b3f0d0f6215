"""Stable, linkable URLs; drill-down state (chosen unit, stages, provider, page) lives in the
query string."""

from django.contrib import admin
from django.urls import path

from boxbench.views import downloads, pages, runs

urlpatterns = [
    path("", pages.overview, name="overview"),
    path("scores.csv", downloads.overview_csv, name="overview-csv"),
    path("benchmarks/<slug:slug>/", pages.benchmark, name="benchmark"),
    path("benchmarks/<slug:slug>.csv", downloads.benchmark_csv, name="benchmark-csv"),
    path("benchmarks/<slug:slug>/units/<slug:unit_slug>/", pages.unit, name="unit"),
    path("benchmarks/<slug:slug>/units/<slug:unit_slug>.csv", downloads.unit_csv, name="unit-csv"),
    path("providers/<slug:slug>/", pages.provider, name="provider"),
    path("runs/<uuid:run_id>/", runs.run_page, name="run"),
    path("runs/<uuid:run_id>/raw.jsonl", downloads.raw_jsonl, name="run-raw-jsonl"),
    path("runs/<uuid:run_id>/raw.csv", downloads.raw_csv, name="run-raw-csv"),
    path("methodology/", pages.methodology, name="methodology"),
    path("admin/", admin.site.urls),
]
