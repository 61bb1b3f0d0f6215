"""CSV downloads of every table (the same rows as the page) and streamed raw data per run."""

import io

from defusedcsv import csv
from django.http import HttpResponse, StreamingHttpResponse

from boxbench.models import Scope
from boxbench.rawdata import export_csv, iter_jsonl_bytes
from boxbench.views import tables
from boxbench.views.access import aggregate, chosen_view, visible_run


def _csv_response(table: tables.Table, filename: str) -> HttpResponse:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.columns)
    writer.writerows(table.rows)
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def overview_csv(request):
    return _csv_response(tables.score_table(aggregate(Scope.OVERVIEW)), "scores.csv")


def benchmark_csv(request, slug):
    data = aggregate(Scope.BENCHMARK, slug)
    if chosen_view(request, data) == "cost":
        return _csv_response(tables.benchmark_cost_table(data), f"{slug}-cost.csv")
    return _csv_response(tables.benchmark_table(data), f"{slug}.csv")


def unit_csv(request, slug, unit_slug):
    data = aggregate(Scope.UNIT, slug, unit_slug)
    if chosen_view(request, data) == "cost":
        return _csv_response(tables.unit_cost_table(data), f"{slug}-{unit_slug}-cost.csv")
    return _csv_response(tables.unit_table(data), f"{slug}-{unit_slug}.csv")


def raw_jsonl(request, run_id):
    run = visible_run(request, run_id)
    response = StreamingHttpResponse(iter_jsonl_bytes(run), content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="run-{run.id}.jsonl"'
    return response


def raw_csv(request, run_id):
    run = visible_run(request, run_id)
    response = StreamingHttpResponse(export_csv(run), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="run-{run.id}.csv"'
    return response
