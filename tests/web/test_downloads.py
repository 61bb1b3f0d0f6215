import json
import shutil

import pytest

from boxbench import publishing
from boxbench.models import Provider, Trial
from boxbench.rawdata import FULL, PUBLIC, export_jsonl
from boxbench.views.tables import header
from tests.support.web import explain_failures, html_table, rows_of, rows_of_text
from tests.web import factory

pytestmark = pytest.mark.django_db


RAW_JSONL = f"/runs/{factory.RUN_ID}/raw.jsonl"
RAW_CSV = f"/runs/{factory.RUN_ID}/raw.csv"


def test_it_downloads_the_benchmark_table_exactly_as_shown(client, published_run):
    rows = rows_of(client.get("/benchmarks/deepswe.csv"))
    assert rows[0] == [
        "provider",
        "rank",
        "label",
        "workload value",
        "measure unit",
        "substituted units",
        "n",
        "units",
    ]
    # The page labels the CSV's id columns for readers: "workload value" reads "Workload value
    # (ms)"; the rows are the same.
    page = html_table(client.get("/benchmarks/deepswe/"), "benchmark-table")
    assert page == [[header(c, "ms") for c in rows[0]], *rows[1:]]
    boat = next(r for r in rows if r[0] == "boat")
    assert boat[4:8] == ["ms", "trace-c", "40", "all 3 units"]
    tiny = next(r for r in rows if r[0] == "tiny")
    assert tiny[1:5] == ["", "Not Supported", "", ""]


def test_a_single_units_benchmark_csv_calls_its_median_a_median_with_its_interval(
    client, published_run
):
    header, *rows = rows_of(client.get("/benchmarks/create.csv"))
    assert header[:7] == [
        "provider",
        "rank",
        "label",
        "median",
        "ci_low",
        "ci_high",
        "measure unit",
    ]
    assert "workload value" not in header
    unit_header, *unit_rows = rows_of(client.get("/benchmarks/create/units/create.csv"))
    units = {r[0]: dict(zip(unit_header, r, strict=True)) for r in unit_rows}
    for row in rows:
        if row[1]:  # ranked: the unit's median, interval and unit
            shown = units[row[0]]
            assert row[3:7] == [shown["median"], shown["ci_low"], shown["ci_high"], "ms"]
    api = client.get("/api/v1/benchmarks/create").json()["table"]
    assert [api["columns"], *api["rows"]] == [header, *rows]


def test_it_downloads_the_unit_table_with_one_column_per_stage(client, published_run):
    rows = rows_of(client.get("/benchmarks/deepswe/units/trace-a.csv"))
    assert rows[0][:10] == [
        "provider",
        "rank",
        "label",
        "n",
        "median",
        "ci_low",
        "ci_high",
        "tail",
        "tail kind",
        "mean",
    ]
    assert rows[0][10:] == [
        "measure unit",
        "setup median (ms)",
        "replay median (ms)",
        "verify median (ms)",
    ]
    page = html_table(client.get("/benchmarks/deepswe/units/trace-a/"), "unit-table")
    assert page == [[header(c, "ms") for c in rows[0]], *rows[1:]]
    local = rows[1]
    assert local[0] == "local" and local[1] == "1" and local[8] == "p95" and local[10] == "ms"
    assert float(local[5]) <= float(local[4]) <= float(local[6])


def test_it_downloads_the_score_tree(client, published_run):
    rows = rows_of(client.get("/scores.csv"))
    assert rows[0] == [
        "level",
        "node",
        "title",
        "provider",
        "score",
        "rank",
        "status",
        "statistic",
        "value",
        "measure unit",
        "ci_low",
        "ci_high",
        "n",
        "run",
        "image digest",
        "units",
    ]
    overall = [r for r in rows if r[0] == "overall"]
    assert overall[0][3:6] == ["local", "100.0", "1"]
    assert {r[3] for r in overall} == {"local", "docker", "boat"}
    unit_rows = [r for r in rows if r[1] == "workload_time/deepswe/trace-c"]
    scored = {r[3] for r in unit_rows if r[4]}
    assert scored == {"local", "docker"}  # boat has no result there
    assert all(r[13] == factory.RUN_ID for r in unit_rows if r[3] in scored)


def test_scores_csv_carries_each_units_median_interval_and_unit_as_its_csv_does(
    client, published_run
):
    header, *rows = rows_of(client.get("/scores.csv"))
    column = {name: i for i, name in enumerate(header)}
    for slug, unit, node in (
        ("deepswe", "trace-a", "workload_time/deepswe/trace-a"),
        ("create", "create", "sandbox_operations/create/create"),
        ("cpu", "cpu", "machine_performance/cpu/cpu"),
    ):
        unit_header, *unit_rows = rows_of(client.get(f"/benchmarks/{slug}/units/{unit}.csv"))
        by = {r[0]: dict(zip(unit_header, r, strict=True)) for r in unit_rows}
        found = {r[column["provider"]]: r for r in rows if r[column["node"]] == node}
        assert set(found) == set(by), node  # every provider of the unit, scored or not
        for provider, shown in by.items():
            row = found[provider]
            assert row[column["statistic"]] == "median"
            assert (
                row[column["value"]]
                == shown[next(c for c in by[provider] if c.startswith("median"))]
            )
            assert row[column["status"]] == shown["label"]
            assert row[column["n"]] == shown["n"]
            assert row[column["measure unit"]] in ("ms", "ops/s")


def test_scores_csv_lists_a_provider_without_a_score_with_its_label(client, published_run):
    header, *rows = rows_of(client.get("/scores.csv"))
    column = {name: i for i, name in enumerate(header)}
    benchmark = {
        r[column["provider"]]: r for r in rows if r[column["node"]] == "workload_time/deepswe"
    }
    tiny = benchmark["tiny"]
    assert tiny[column["score"]] == "" and tiny[column["rank"]] == ""
    assert tiny[column["status"]] == "Not Supported"
    local = benchmark["local"]
    assert local[column["statistic"]] == "workload value" and local[column["measure unit"]] == "ms"
    deepswe = rows_of(client.get("/benchmarks/deepswe.csv"))
    value = next(r[3] for r in deepswe[1:] if r[0] == "local")
    assert local[column["value"]] == value


def test_the_overall_score_averages_all_four_sections_even_one_nobody_scored(client, imported_run):
    # Nobody sources its cost: the Workload Cost section has no score, and still counts as one
    # of the four the overall averages, adding 0 for everyone (local leads the other three).
    for provider in Provider.objects.all():
        provider.pricing = {**provider.pricing, "provider_sourced": False}
        provider.save()
    explain_failures(imported_run)
    publishing.publish(imported_run)
    rows = rows_of(client.get("/scores.csv"))
    assert not [r for r in rows if r[0] == "section" and r[1] == "workload_cost"]
    overall = {r[3]: r[4:6] for r in rows if r[0] == "overall"}
    assert overall["local"] == ["75.0", "1"]


def test_it_streams_the_raw_data_in_the_export_format(client, published_run):
    response = client.get(f"/runs/{factory.RUN_ID}/raw.jsonl")
    assert response.streaming
    text = b"".join(response.streaming_content).decode()
    assert text == "".join(export_jsonl(published_run, PUBLIC))
    assert response["Content-Disposition"] == f'attachment; filename="run-{factory.RUN_ID}.jsonl"'


def streamed(response) -> str:
    return b"".join(response.streaming_content).decode()


def test_the_public_raw_data_holds_successes_and_counts_only(client, published_run):
    lines = [json.loads(line) for line in streamed(client.get(RAW_JSONL)).splitlines()]
    assert lines[0]["form"] == "public"
    trials = [line for line in lines if line["type"] == "trial"]
    assert {t["outcome"] for t in trials} == {"success"}
    assert all(t["replaces"] is None for t in trials)
    counts = [line for line in lines if line["type"] == "counts"]
    assert counts == [
        {
            "type": "counts",
            "benchmark": "create",
            "benchmark_version": "1",
            "unit": "create",
            "provider": "docker",
            "outcomes": {"provider_failure": 1},
            "unreplaced_provider_failures": 1,
        }
    ]
    raw_csv = streamed(client.get(f"/runs/{factory.RUN_ID}/raw.csv"))
    assert "provider_failure" not in raw_csv and "HTTP 503" not in raw_csv
    assert len(rows_of_text(raw_csv)) - 1 == len(trials)


def test_evidence_viewers_get_the_full_raw_data_unless_they_ask_for_the_public(
    staff_client, published_run
):
    response = staff_client.get(RAW_JSONL)
    assert streamed(response) == "".join(export_jsonl(published_run, FULL))
    assert response["Content-Disposition"].endswith(f'run-{factory.RUN_ID}-full.jsonl"')
    public = staff_client.get(f"{RAW_JSONL}?form=public")
    assert streamed(public) == "".join(export_jsonl(published_run, PUBLIC))
    assert "create returned HTTP 503" in streamed(staff_client.get(RAW_CSV))


def test_it_defuses_spreadsheet_formulas_in_the_raw_csv(staff_client, published_run, settings):
    Trial.objects.filter(run=published_run, outcome="provider_failure").update(
        cause='=HYPERLINK("http://evil")'
    )
    response = staff_client.get(RAW_CSV)
    text = streamed(response)
    assert "'=HYPERLINK" in text
    assert response["Content-Type"].startswith("text/csv")
    Trial.objects.filter(run=published_run, outcome="provider_failure").update(
        cause='\t=HYPERLINK("http://evil")'
    )
    # A published run's trials never change, so its export is kept per publication; this test
    # rewrites them, so it drops the kept file.
    shutil.rmtree(settings.RAW_EXPORT_DIR)
    assert "'\t=HYPERLINK" in streamed(staff_client.get(RAW_CSV))


def test_it_returns_404_for_csv_of_something_unpublished(client, imported_run):
    assert client.get("/benchmarks/deepswe.csv").status_code == 404
    assert client.get("/scores.csv").status_code == 404


def test_it_defuses_a_table_cell_that_starts_with_a_tab():
    from boxbench.views.downloads import csv_response
    from boxbench.views.tables import Table

    response = csv_response(Table(["name", "cause"], [["a", "\t=1+1"], ["b", "\r@x"]]), "t.csv")
    assert response.content.decode() == "name,cause\na,'\t=1+1\nb,'\r@x\n"
