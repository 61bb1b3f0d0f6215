"""A run's raw CSV as analysts read it: each measurement a column named with its unit, holding
the same value as the JSON Lines file; a trial leaves other benchmarks' columns blank."""

import json

import pytest

from boxbench.rawdata import SCHEMA_VERSION
from tests.support.web import rows_of_text
from tests.web import factory

pytestmark = pytest.mark.django_db


def streamed(response) -> str:
    return b"".join(response.streaming_content).decode()


def test_each_measurement_is_a_column_with_the_jsonl_files_value(client, published_run):
    header, *rows = rows_of_text(streamed(client.get(f"/runs/{factory.RUN_ID}/raw.csv")))
    lines = [
        json.loads(line)
        for line in streamed(client.get(f"/runs/{factory.RUN_ID}/raw.jsonl")).splitlines()
    ]
    assert lines[0]["schema_version"] == SCHEMA_VERSION == 6
    units = {
        (b["slug"], group, name): spec["unit"]
        for b in lines[0]["benchmarks"]
        for group in ("metrics", "stages")
        for name, spec in b["measurements"][group].items()
    }
    assert "metrics" not in header and "stages" not in header
    measured = [c for c in header if c.startswith(("metric.", "stage."))]
    assert measured == sorted(measured, key=lambda c: (not c.startswith("metric."), c))
    # The same name in two units is two columns: Create's total in ms, CPU's in ops/s.
    assert {"metric.total (ms)", "metric.total (ops/s)"} <= set(measured)
    trials = [line for line in lines if line["type"] == "trial"]
    assert len(rows) == len(trials)
    for row, trial in zip(rows, trials, strict=True):
        cells = dict(zip(header, row, strict=True))
        assert cells["trial"] == trial["trial"]
        expected = {
            f"{kind}.{name} ({units[(trial['benchmark'], group, name)]})": value
            for group, kind in (("metrics", "metric"), ("stages", "stage"))
            for name, value in trial[group].items()
        }
        for column in measured:
            if column in expected:
                assert float(cells[column]) == expected[column], column
            else:
                assert cells[column] == "", column


def test_a_reader_can_take_the_median_from_one_column(client, published_run):
    header, *rows = rows_of_text(streamed(client.get(f"/runs/{factory.RUN_ID}/raw.csv")))
    at = {name: i for i, name in enumerate(header)}
    values = sorted(
        float(r[at["metric.total (ms)"]])
        for r in rows
        if r[at["benchmark"]] == "create" and r[at["provider"]] == "local"
    )
    lower_median = values[(len(values) - 1) // 2]
    unit_header, *unit_rows = rows_of_text(
        client.get("/benchmarks/create/units/create.csv").content.decode()
    )
    local = dict(zip(unit_header, next(r for r in unit_rows if r[0] == "local"), strict=True))
    assert float(local["median"]) == pytest.approx(lower_median, rel=1e-3)
