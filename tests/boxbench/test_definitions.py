"""Stored definitions never change: planning a run or importing a file refuses a definition that
differs from the stored one under the same slug (and version), naming what differs."""

import json

import pytest
from django.forms.models import model_to_dict

from bench.synthetic import synthetic_run
from boxbench.definitions import DefinitionConflict, ensure_unit
from boxbench.models import Benchmark, Provider, Run, Unit
from boxbench.rawdata import RawDataError, import_jsonl
from runner.benchmarks import create
from runner.catalog import sync_catalog
from runner.plan import PlanError, plan_run
from tests.boxbench.rawdata_files import reseal

pytestmark = pytest.mark.django_db


def synthetic_lines(seed=3, name="synthetic"):
    return list(synthetic_run(trials=60, seed=seed, name=name))


def write(tmp_path, lines, name="run.jsonl"):
    path = tmp_path / name
    path.write_text("".join(lines), encoding="utf-8")
    return path


def with_header(lines, change):
    header = json.loads(lines[0])
    change(header)
    return reseal([json.dumps(header) + "\n", *lines[1:]])  # the trailer's digest follows


def snapshot():
    return [
        [model_to_dict(row) for row in model.objects.order_by("pk")]
        for model in (Provider, Benchmark, Unit)
    ]


def add_local_provider(header):
    """An imported provider under the slug the code declares, with another declaration."""
    entry = dict(header["providers"][0], slug="local", name="Imported local")
    header["providers"].append(entry)


def plan(benchmark):
    return plan_run("later", benchmarks=[benchmark], providers=["local"], trials=1, seed=1)


def test_planning_after_an_import_refuses_a_different_provider_and_changes_nothing(tmp_path):
    import_jsonl(write(tmp_path, with_header(synthetic_lines(), add_local_provider)))
    before = snapshot()
    with pytest.raises(PlanError) as error:
        plan("destroy")
    message = str(error.value)
    assert "provider 'local'" in message
    origin = "runner/provider_declarations/local.yaml"
    assert f"stored name is 'Imported local', {origin} says" in message
    assert "stored declaration is 'digest alpha-declaration'" in message
    assert snapshot() == before
    assert Run.objects.count() == 1


def _create_at_the_codes_version(lines):
    """The synthetic run with its 'create' stated at the code's version, differing from it."""
    version = create.DEFINITION.version
    out = []
    for line in lines:
        record = json.loads(line)
        for benchmark in record.get("benchmarks", []):
            if benchmark["slug"] == "create":
                benchmark["version"] = version
        if record.get("benchmark") == "create":
            record["benchmark_version"] = version
        out.append(json.dumps(record, separators=(",", ":")) + "\n")
    return reseal(out)  # the trailer's digest follows


def test_planning_after_an_import_refuses_a_different_benchmark_and_changes_nothing(tmp_path):
    # Its 'create', at the code's version, is not the code's.
    import_jsonl(write(tmp_path, _create_at_the_codes_version(synthetic_lines())))
    before = snapshot()
    version = create.DEFINITION.version
    refused = rf"benchmark 'create' version '{version}': .*stored trials_per_unit is 3, the code"
    with pytest.raises(PlanError, match=refused):
        plan("create")
    assert snapshot() == before
    assert Benchmark.objects.get(slug="create").title == "Create"  # the imported title
    # A benchmark the import did not bring plans as usual, beside the imported rows.
    run = plan("destroy")
    assert run.trials.count() == 1
    assert [row for row in snapshot()[1] if row["slug"] == "create"] == [
        row for row in before[1] if row["slug"] == "create"
    ]


def test_planning_twice_reuses_the_stored_rows():
    sync_catalog()
    before = snapshot()
    plan("destroy")
    sync_catalog()
    plan("destroy")
    assert snapshot() == before


def test_an_import_differing_from_the_planned_definition_is_refused_with_file_and_line(tmp_path):
    plan("destroy")
    before = snapshot()

    def as_code_destroy(header):
        entry = dict(header["benchmarks"][0], slug="destroy", metric="something_else_ms")
        header["benchmarks"].append(entry)

    path = write(tmp_path, with_header(synthetic_lines(), as_code_destroy), "other.jsonl")
    with pytest.raises(RawDataError) as error:
        import_jsonl(path)
    message = str(error.value)
    assert message.startswith(f"{path}, line 1, field ")
    assert "benchmark 'destroy' version '1'" in message
    assert "stored metric is 'destroy_ms', this file says 'something_else_ms'" in message
    assert snapshot() == before
    assert Run.objects.count() == 1  # the planned run only


def test_an_import_whose_unit_differs_is_refused_not_ignored(tmp_path):
    import_jsonl(write(tmp_path, synthetic_lines()))
    before = snapshot()

    def change_unit(header):
        header["benchmarks"][0]["units"][0]["digest"] = "changed"

    lines = with_header(synthetic_lines(seed=4, name="second"), change_unit)
    with pytest.raises(RawDataError) as error:
        import_jsonl(write(tmp_path, lines, "second.jsonl"))
    message = str(error.value)
    assert "line 1, field 'benchmarks[0].units[0].digest'" in message
    assert "unit 'create-unit-1'" in message or "unit 'default'" in message
    assert "stored digest is '', this file says 'changed'" in message
    assert snapshot() == before and Run.objects.count() == 1


def test_a_second_import_with_the_same_definitions_reuses_them(tmp_path):
    import_jsonl(write(tmp_path, synthetic_lines()))
    before = snapshot()
    import_jsonl(write(tmp_path, synthetic_lines(seed=4, name="second"), "second.jsonl"))
    assert snapshot() == before and Run.objects.count() == 2


def test_a_unit_differing_from_its_stored_definition_is_refused():
    benchmark = plan("destroy").trials.get().benchmark
    unit = benchmark.units.first()
    values = {"slug": unit.slug, "title": unit.title, "definition": {"x": 1}, "digest": unit.digest}
    with pytest.raises(DefinitionConflict, match=r"unit '.*': stored definition is .*the caller"):
        ensure_unit(benchmark, values, "the caller")
    unit.refresh_from_db()
    assert unit.definition != {"x": 1}
