import io
import json
import uuid

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from bench.synthetic import synthetic_run
from boxbench.models import MeasurementName, Provider, Run, Trial
from boxbench.rawdata import FULL, PUBLIC, RawDataError, export_csv, export_jsonl, import_jsonl
from tests.boxbench.rawdata_files import reseal, with_field

pytestmark = pytest.mark.django_db


def write_lines(path, lines):
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.fixture
def synthetic_file(tmp_path):
    return write_lines(tmp_path / "run.jsonl", synthetic_run(trials=90, seed=3))


def export_text(run, form=FULL):
    """The full form: these tests keep every trial, failures and replacements included (the
    public form has tests/boxbench/test_rawdata_public.py)."""
    return "".join(export_jsonl(run, form))


def test_it_round_trips_export_import_export_byte_for_byte(tmp_path, synthetic_file):
    first = import_jsonl(synthetic_file)
    exported = export_text(first.run)
    Run.objects.all().delete()
    second = import_jsonl(write_lines(tmp_path / "again.jsonl", [exported]))
    assert export_text(second.run) == exported


def test_it_keeps_every_trial_measurement_and_replacement(synthetic_file):
    lines = synthetic_file.read_text().splitlines()
    trials = [json.loads(line) for line in lines[1:-1]]
    result = import_jsonl(synthetic_file)
    assert result.trials == len(trials) == Trial.objects.count()
    expected = sum(len(t["metrics"]) + len(t["stages"]) for t in trials)
    stored = sum(len(t.metrics) + len(t.stages) for t in Trial.objects.all())
    assert result.measurements == expected == stored
    replacements = [t for t in trials if t["replaces"]]
    assert replacements
    stored = Trial.objects.get(id=replacements[0]["trial"])
    assert str(stored.replaces_id) == replacements[0]["replaces"]
    assert stored.replaces.outcome == "provider_failure"


def test_it_keeps_a_cut_short_trial_flagged_through_a_round_trip(tmp_path, synthetic_file):
    # The format has no cut_short field: a trial cut short says so in its cause, as the runner
    # writes it, and import sets the column from it.
    lines = synthetic_file.read_text().splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if '"provider_failure"' in line)
    record = json.loads(lines[index])
    lines = with_field(lines, index, "owner", "unknown")
    lines = with_field(lines, index, "cause", "cut short: worker lost")
    run = import_jsonl(write_lines(tmp_path / "cut.jsonl", reseal(lines))).run
    assert list(Trial.objects.filter(cut_short=True).values_list("id", flat=True)) == [
        uuid.UUID(record["trial"])
    ]
    exported = [json.loads(line) for line in export_text(run).splitlines()[1:-1]]
    trials = [line for line in exported if line["type"] == "trial"]
    assert [t["trial"] for t in trials if t["cause"].startswith("cut short: ")] == [record["trial"]]


def test_it_writes_the_header_first_with_the_schema_version(synthetic_file):
    run = import_jsonl(synthetic_file).run
    header = json.loads(export_text(run).splitlines()[0])
    assert header["type"] == "run"
    assert header["schema_version"] == 6
    assert header["form"] == "full"
    assert {b["slug"] for b in header["benchmarks"]} == {"create", "cpu-single", "deepswe"}
    assert [p["slug"] for p in header["providers"]] == ["alpha", "bravo", "charlie"]


def test_it_exports_the_flat_csv_with_one_row_per_trial(synthetic_file):
    from defusedcsv import csv

    run = import_jsonl(synthetic_file).run
    rows = list(csv.reader(io.StringIO("".join(export_csv(run, FULL)))))
    assert rows[0][:5] == ["run", "benchmark", "unit", "provider", "trial"]
    assert len(rows) - 1 == Trial.objects.count()


def test_it_refuses_a_malformed_line_naming_file_line_and_field(tmp_path, synthetic_file):
    lines = synthetic_file.read_text().splitlines(keepends=True)
    record = json.loads(lines[5])
    record["round"] = "two"
    lines[5] = json.dumps(record) + "\n"
    bad = write_lines(tmp_path / "bad.jsonl", lines)
    with pytest.raises(
        RawDataError, match=r"bad.jsonl, line 6, field 'round': expected `int`, got `str`"
    ):
        import_jsonl(bad)
    assert Run.objects.count() == 0
    assert Trial.objects.count() == 0
    assert Provider.objects.count() == 0


def test_it_refuses_invalid_json_after_many_good_lines_and_writes_nothing(tmp_path):
    lines = list(synthetic_run(trials=12000, seed=4))
    lines[-2] = lines[-2][:20] + "\n"
    bad = write_lines(tmp_path / "cut.jsonl", lines)
    with pytest.raises(RawDataError, match=f"cut.jsonl, line {len(lines) - 1}: not valid JSON"):
        import_jsonl(bad)
    assert Trial.objects.count() == 0
    assert MeasurementName.objects.count() == 0


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("outcome", "won", "field 'outcome': invalid enum value 'won'"),
        ("provider", "zulu", "field 'provider': 'zulu' is not in the run header"),
        ("unit", "nope", "field 'unit': 'nope' is not a unit of 'create'"),
        ("trial", "not-a-uuid", "field 'trial': invalid UUID"),
        (
            "started_at",
            "2026-11-01T00:00:00",
            "field 'started_at': expected `datetime` with a timezone",
        ),
        ("metrics", {"create_ms": "fast"}, r"field 'metrics.create_ms': expected `float \| null`"),
        ("metrics", {"other_ms": 1.0}, "'other_ms' is not declared"),
        ("metrics", {"create_ms": float("nan")}, r"line \d+: not valid JSON"),
        ("seq", 0, "field 'seq': expected `int` >= 1"),
    ],
)
def test_it_names_each_kind_of_bad_field(tmp_path, synthetic_file, field, value, message):
    lines = synthetic_file.read_text().splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if '"benchmark":"create"' in line)
    record = json.loads(lines[index])
    record[field] = value
    lines[index] = json.dumps(record) + "\n"
    with pytest.raises(RawDataError, match=message):
        import_jsonl(write_lines(tmp_path / "bad.jsonl", lines))
    assert Trial.objects.count() == 0


def test_it_refuses_a_file_without_a_run_header(tmp_path, synthetic_file):
    lines = synthetic_file.read_text().splitlines(keepends=True)[1:]
    with pytest.raises(RawDataError, match="line 1, field 'type': the first line must be"):
        import_jsonl(write_lines(tmp_path / "headless.jsonl", lines))


def test_it_refuses_a_malformed_manifest_naming_its_field(tmp_path, synthetic_file):
    lines = synthetic_file.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["manifest"]["seed"] = "seven"
    lines[0] = json.dumps(header) + "\n"
    with pytest.raises(RawDataError, match=r"field 'manifest': .*got `str` - at `\$.seed`"):
        import_jsonl(write_lines(tmp_path / "bad-manifest.jsonl", lines))
    assert Trial.objects.count() == 0


def test_it_refuses_a_newer_schema_version(tmp_path, synthetic_file):
    lines = synthetic_file.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["schema_version"] = 99
    lines[0] = json.dumps(header) + "\n"
    with pytest.raises(RawDataError, match="'schema_version': 99 is not supported"):
        import_jsonl(write_lines(tmp_path / "future.jsonl", lines))


def test_it_refuses_a_replacement_of_a_trial_outside_the_run(tmp_path, synthetic_file):
    lines = synthetic_file.read_text().splitlines(keepends=True)
    record = json.loads(lines[3])
    record["replaces"] = "00000000-0000-0000-0000-000000000001"
    lines[3] = json.dumps(record) + "\n"
    with pytest.raises(
        RawDataError,
        match="line 4, field 'replaces': .* is not an earlier trial of this file that failed",
    ):
        import_jsonl(write_lines(tmp_path / "orphan.jsonl", lines))
    assert Trial.objects.count() == 0


def test_it_refuses_to_import_the_same_run_twice(synthetic_file):
    import_jsonl(synthetic_file)
    with pytest.raises(RawDataError, match="is already in the database"):
        import_jsonl(synthetic_file)
    assert Run.objects.count() == 1


def test_it_refuses_a_provider_whose_declaration_differs_here(synthetic_file):
    Provider.objects.create(slug="alpha", name="Alpha", adapter="x", declaration_digest="other")
    refused = "provider 'alpha': .*stored declaration_digest is 'other'"
    with pytest.raises(RawDataError, match=refused):
        import_jsonl(synthetic_file)
    assert Run.objects.count() == 0


def test_it_imports_and_exports_from_the_command_line(tmp_path, synthetic_file):
    out = io.StringIO()
    call_command("bench", "import", str(synthetic_file), stdout=out)
    assert "Imported run" in out.getvalue()
    run = Run.objects.get()
    target = tmp_path / "out.jsonl"
    call_command("bench", "export", run.name, "-o", str(target))
    assert target.read_text() == export_text(run, PUBLIC)  # the public form unless --full
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    call_command("bench", "export", run.name, "--full", "-o", str(target))
    assert target.read_text() == export_text(run, FULL)
    call_command("bench", "export", str(run.id), "--format", "csv", "-o", str(tmp_path / "o.csv"))
    assert (tmp_path / "o.csv").read_text().startswith("run,benchmark,unit")


def test_it_reports_a_bad_file_as_a_command_error(tmp_path):
    with pytest.raises(CommandError, match="missing.jsonl: cannot be read"):
        call_command("bench", "import", str(tmp_path / "missing.jsonl"))
    with pytest.raises(CommandError, match="no run has id or name 'nope'"):
        call_command("bench", "export", "nope")


def test_it_defuses_spreadsheet_formulas_in_the_csv(tmp_path, synthetic_file):
    run = import_jsonl(synthetic_file).run
    Trial.objects.filter(run=run).update(cause="=HYPERLINK(1)")
    text = "".join(export_csv(run, FULL))
    assert ",=HYPERLINK" not in text
    assert "'=HYPERLINK" in text
    for lead in ("\t", "\r"):
        Trial.objects.filter(run=run).update(cause=f"{lead}=HYPERLINK(1)")
        text = "".join(export_csv(run, FULL))
        assert f"'{lead}=HYPERLINK" in text
        assert f",{lead}=HYPERLINK" not in text and f'"{lead}=HYPERLINK' not in text


def test_it_round_trips_the_first_and_last_storable_moments(tmp_path):
    """Years 1 and 9999 are accepted (a run that spans them), and export and the audit still
    read them back."""
    from boxbench import publishing
    from tests.boxbench.rawdata_files import reseal, valid_lines, with_field

    lines = valid_lines()
    lines = with_field(lines, 0, "run.started_at", "0001-01-01T00:00:00.000000Z")
    lines = with_field(lines, 0, "run.ended_at", "9999-12-31T23:59:59.999999Z")
    lines = with_field(lines, 1, "started_at", "0001-01-01T00:00:00.000000Z")
    lines = with_field(lines, 1, "ended_at", "9999-12-31T23:59:59.999999Z")
    lines = with_field(lines, 2, "started_at", "9999-12-31T22:59:59.000000-01:00")
    lines = with_field(lines, 2, "ended_at", None)
    path = write_lines(tmp_path / "edges.jsonl", reseal(lines))
    run = import_jsonl(path).run
    exported = export_text(run)
    first, second = (json.loads(line) for line in exported.splitlines()[1:3])
    assert (first["started_at"], first["ended_at"]) == (
        "0001-01-01T00:00:00.000000Z",
        "9999-12-31T23:59:59.999999Z",
    )
    assert second["started_at"] == "9999-12-31T23:59:59.000000Z"
    publishing.run_audit(run)
    Run.objects.all().delete()
    again = import_jsonl(write_lines(tmp_path / "again.jsonl", [exported])).run
    assert export_text(again) == exported


def test_the_header_declares_every_name_the_run_stored_in_both_forms(
    monkeypatch, tmp_path, synthetic_file
):
    # The header is written before the trials stream, from the units and clocks the run stored:
    # a name only unsuccessful trials measured is declared in the public form too, unused there.
    from boxbench.rawdata import exporter

    run = import_jsonl(synthetic_file).run
    failed = list(Trial.objects.exclude(outcome="success"))
    assert failed
    for trial in failed:
        trial.metrics = {**trial.metrics, "before_failing": 1.5}
        trial.save(update_fields=["metrics"])
    for benchmark_id in {trial.benchmark_id for trial in failed}:
        MeasurementName.objects.create(
            run=run,
            benchmark_id=benchmark_id,
            kind="metric",
            name="before_failing",
            unit="s",
            clock="job_host",
        )
    texts = {form: export_text(run, form) for form in (FULL, PUBLIC)}
    for form in (FULL, PUBLIC):
        header = json.loads(texts[form].splitlines()[0])
        declared = {
            b["slug"]: b["measurements"]["metrics"].get("before_failing")
            for b in header["benchmarks"]
        }
        assert {"unit": "s", "clock": "job_host"} in declared.values()
    lines = {form: [json.loads(line) for line in texts[form].splitlines()[1:-1]] for form in texts}
    assert sum("before_failing" in t.get("metrics", {}) for t in lines[FULL]) == len(failed)
    assert not any("before_failing" in t.get("metrics", {}) for t in lines[PUBLIC])
    # Read in pages of 4, the same bytes; and both forms go back in and out unchanged.
    monkeypatch.setattr(exporter, "PAGE", 4)
    for form in (FULL, PUBLIC):
        assert export_text(run, form) == texts[form]
    for form in (FULL, PUBLIC):
        Run.objects.all().delete()
        again = import_jsonl(write_lines(tmp_path / f"again-{form}.jsonl", [texts[form]])).run
        assert export_text(again, form) == texts[form]


def test_a_measurement_without_a_stored_unit_is_refused_by_name(synthetic_file):
    run = import_jsonl(synthetic_file).run
    trial = Trial.objects.filter(outcome="success").first()
    trial.stages = {**trial.stages, "unheard_of": 2.0}
    trial.save(update_fields=["stages"])
    with pytest.raises(
        RawDataError, match=rf"benchmark {trial.benchmark.slug}: stage 'unheard_of'"
    ):
        export_text(run, FULL)


def test_the_tally_counts_an_imported_run_and_keeps_counting_after(tmp_path, synthetic_file):
    from django.db.models import Count

    from boxbench.models import TrialTally

    def tally() -> dict:
        rows = TrialTally.objects.filter(n__gt=0).values_list(
            "provider_id", "state", "outcome", "n"
        )
        return {(p, s, o): n for p, s, o, n in rows}

    # A refused import changes nothing, the tally's trigger included.
    lines = synthetic_file.read_text().splitlines(keepends=True)
    with pytest.raises(RawDataError):
        import_jsonl(write_lines(tmp_path / "cut.jsonl", lines[:-1]))
    run = import_jsonl(synthetic_file).run
    counted = Trial.objects.values("provider_id", "state", "outcome").annotate(n=Count("id"))
    expected = {(c["provider_id"], c["state"], c["outcome"]): c["n"] for c in counted}
    assert tally() == expected
    model = Trial.objects.filter(run=run).first()
    Trial.objects.create(
        run=run,
        benchmark_id=model.benchmark_id,
        unit_id=model.unit_id,
        provider_id=model.provider_id,
        round=1,
        seq=None,
    )
    key = (model.provider_id, "queued", "")
    assert tally() == {**expected, key: expected.get(key, 0) + 1}


def test_it_still_reads_a_version_4_file(tmp_path, synthetic_file):
    """Version 5 changed only the CSV: a version-4 JSON Lines file imports as before."""
    lines = reseal(
        with_field(synthetic_file.read_text().splitlines(keepends=True), 0, "schema_version", 4)
    )
    result = import_jsonl(write_lines(tmp_path / "v4.jsonl", lines))
    assert Trial.objects.filter(run=result.run).count() == sum(
        '"type":"trial"' in line for line in lines
    )
    assert json.loads(export_text(result.run).splitlines()[0])["schema_version"] == 6
