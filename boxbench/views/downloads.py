"""CSV downloads of every table (the same rows as the page) and raw data per run (a published
run's from a file written once per publication, views/raw_files.py)."""

import io

from django.http import HttpResponse

from boxbench import permissions, safecsv
from boxbench.models import Scope
from boxbench.rawdata import FULL, PUBLIC, export_csv, iter_jsonl_bytes
from boxbench.views import raw_files, score_tables, tables
from boxbench.views.access import aggregate, chosen_view, single_unit, visible_run


def csv_response(table: tables.Table, filename: str) -> HttpResponse:
    buffer = io.StringIO()
    writer = safecsv.writer(buffer, lineterminator="\n")
    writer.writerow(table.columns)
    writer.writerows(table.rows)
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def overview_csv(request):
    return csv_response(score_tables.score_table(aggregate(Scope.OVERVIEW)), "scores.csv")


def benchmark_csv(request, slug):
    data = aggregate(Scope.BENCHMARK, slug)
    if "probes" in data:
        return csv_response(tables.probe_table(data), f"{slug}.csv")
    if chosen_view(request, data) == "cost":
        return csv_response(tables.benchmark_cost_table(data), f"{slug}-cost.csv")
    return csv_response(tables.benchmark_table(data, single_unit(data)), f"{slug}.csv")


def unit_csv(request, slug, unit_slug):
    data = aggregate(Scope.UNIT, slug, unit_slug)
    if chosen_view(request, data) == "cost":
        return csv_response(tables.unit_cost_table(data), f"{slug}-{unit_slug}-cost.csv")
    return csv_response(tables.unit_table(data), f"{slug}-{unit_slug}.csv")


def raw_form(request) -> str:
    """The full form (every trial, private evidence) for those who may see evidence, unless they
    ask for the public one with ?form=public; the public form for everyone else."""
    if permissions.may(request, permissions.VIEW_EVIDENCE) and request.GET.get("form") != PUBLIC:
        return FULL
    return PUBLIC


def _raw_name(run, form: str, extension: str) -> str:
    return f"run-{run.id}{'-full' if form == FULL else ''}.{extension}"


def raw_jsonl(request, run_id):
    run = visible_run(request, run_id)
    form = raw_form(request)
    return raw_files.serve(
        request,
        run,
        form,
        "jsonl",
        lambda: iter_jsonl_bytes(run, form),
        "application/x-ndjson",
        _raw_name(run, form, "jsonl"),
    )


def raw_csv(request, run_id):
    run = visible_run(request, run_id)
    form = raw_form(request)
    return raw_files.serve(
        request,
        run,
        form,
        "csv",
        lambda: export_csv(run, form),
        "text/csv; charset=utf-8",
        _raw_name(run, form, "csv"),
    )
