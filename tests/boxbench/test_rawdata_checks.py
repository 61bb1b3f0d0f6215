"""What `bench import` refuses before anything is written, and how it says so."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from boxbench.models import Benchmark, MeasurementName, Provider, Run, Trial, Unit
from boxbench.rawdata import RawDataError, import_jsonl
from boxbench.rawdata.schema import MAX_LINE_BYTES
from tests.boxbench.rawdata_files import reseal, valid_lines, with_field, write

pytestmark = pytest.mark.django_db

LONG = "x" * 201


def assert_nothing_written():
    assert Run.objects.count() == 0
    assert Trial.objects.count() == 0
    assert MeasurementName.objects.count() == 0
    assert Provider.objects.count() == 0
    assert Benchmark.objects.count() == 0
    assert Unit.objects.count() == 0


def refused(tmp_path, lines, expected: str):
    path = write(tmp_path / "run.jsonl", lines)
    with pytest.raises(RawDataError, match=expected) as caught:
        import_jsonl(path)
    assert_nothing_written()
    return str(caught.value)


@pytest.mark.parametrize(
    ("index", "path", "value", "expected"),
    [
        (
            0,
            "providers.0.slug",
            "local box/../x",
            r"line 1, field 'providers\[0\].slug': expected `str` that is a slug",
        ),
        (
            0,
            "providers.0.name",
            "n" * 101,
            r"field 'providers\[0\].name': expected `str` of length <= 100",
        ),
        (
            0,
            "benchmarks.0.section",
            "nowhere",
            r"field 'benchmarks\[0\].section': invalid enum value 'nowhere'",
        ),
        (
            0,
            "benchmarks.0.direction",
            "sideways",
            r"field 'benchmarks\[0\].direction': invalid enum",
        ),
        (0, "benchmarks.0.cpus", 40000, r"field 'benchmarks\[0\].cpus': expected `int` <= 32767"),
        (
            0,
            "benchmarks.0.trials_per_unit",
            0,
            r"field 'benchmarks\[0\].trials_per_unit': expected `int` >= 1",
        ),
        (0, "benchmarks.0.units.0.slug", "a b", r"field 'benchmarks\[0\].units\[0\].slug'"),
        (
            0,
            "benchmarks.0.version",
            "1/2",
            r"field 'benchmarks\[0\].version': expected `str` that is a version",
        ),
        (0, "run.name", LONG, r"field 'run.name': expected `str` of length <= 200"),
        (0, "run.status", "paused", r"field 'run.status': invalid enum value 'paused'"),
        (0, "run.ended_at", "2026-10-01T00:00:00Z", r"field 'run.ended_at': is before started_at"),
        (
            0,
            "run.started_at",
            "0001-01-01T00:00:00+01:00",
            r"field 'run.started_at': .* outside years 1 to 9999",
        ),
        (0, "run.surprise", 1, r"field 'run.surprise': is not a field of the format"),
        (0, "providers", [[]], r"field 'providers\[0\]': expected `object`, got `array`"),
        (0, "manifest", {"a\u0000": 1}, r"field 'manifest \(a key\)': contains a NUL character"),
        (1, "seq", 1 << 40, r"line 2, field 'seq': expected `int` <= 2147483647"),
        (1, "round", 40000, r"line 2, field 'round': expected `int` <= 32767"),
        (1, "attempt", -1, r"field 'attempt': expected `int` >= 1"),
        (1, "cost_usd", -0.5, r"field 'cost_usd': expected `float` >= 0.0"),
        (1, "in_flight", -1, r"field 'in_flight': expected `float` >= 0.0"),
        (1, "metrics", {"create_ms": -3.0}, r"field 'metrics.create_ms': expected `float` >= 0.0"),
        (
            1,
            "metrics",
            {"create_ms": 1.7e308},
            r"line 2, field 'metrics.create_ms': expected `float` <= 1000000000000.0",
        ),
        (1, "stages", {"Read": 1.7e308}, r"field 'stages.Read': expected `float` <= 1000000000000"),
        (1, "cost_usd", 1.7e308, r"field 'cost_usd': expected `float` <= 1000000000000.0"),
        (1, "in_flight", 1e13, r"field 'in_flight': expected `float` <= 1000000000000.0"),
        (
            1,
            "started_at",
            "0001-01-01T00:00:00Z",
            r"line 2, field 'started_at': 0001-01-01T00:00:00\+00:00 is before the run's "
            r"started_at 2026-11-01T00:00:01\+00:00",
        ),
        (
            1,
            "ended_at",
            "9999-12-31T23:59:59Z",
            r"line 2, field 'ended_at': 9999-12-31T23:59:59\+00:00 is after the run's ended_at "
            r"2026-11-01T06:00:00\+00:00",
        ),
        (1, "batch", "b" * 101, r"field 'batch': expected `str` of length <= 100"),
        (1, "owner", "someone", r"field 'owner': invalid enum value 'someone'"),
        (1, "outcome", "", r"field 'outcome': invalid enum value ''"),
        (1, "cause", "bad\u0000byte", r"line 2, field 'cause': contains a NUL character"),
        (1, "placement", {"k": "v\u0000"}, r"field 'placement.k': contains a NUL character"),
        (1, "placement", [], r"field 'placement': expected `object`, got `array`"),
        (1, "started_at", "10000-01-01T00:00:00Z", r"field 'started_at': invalid RFC3339"),
        (1, "ended_at", "2026-10-01T00:00:00Z", r"line 2, field 'ended_at': is before started_at"),
        (1, "started_at", 17, r"field 'started_at': expected `datetime \| null`, got `int`"),
        (1, "trial", None, r"field 'trial': expected `uuid`, got `null`"),
        (1, "type", "run", r"line 2, field 'type': every line after the header is a trial, counts"),
        (
            1,
            "clock_gates",
            {"metrics": {"nope": "pass"}},
            r"'clock_gates.metrics': 'nope' is not a",
        ),
        (1, "provider", "zulu", r"field 'provider': 'zulu' is not in the run header"),
    ],
)
def test_it_refuses_a_bad_field_naming_file_line_and_field(tmp_path, index, path, value, expected):
    lines = reseal(with_field(valid_lines(), index, path, value))
    message = refused(tmp_path, lines, expected)
    assert message.startswith(str(tmp_path / "run.jsonl"))


def test_it_refuses_a_missing_field(tmp_path):
    lines = reseal(with_field(valid_lines(), 3, "seq", None, delete=True))
    refused(tmp_path, lines, r"line 4, field 'seq': is missing")


def test_it_refuses_duplicates_in_the_header(tmp_path):
    header = json.loads(valid_lines()[0])
    header["providers"].append(header["providers"][0])
    lines = reseal(with_field(valid_lines(), 0, "providers", header["providers"]))
    refused(tmp_path, lines, r"line 1, field 'providers\[3\].slug': 'alpha' appears twice")


def test_it_refuses_a_trial_that_replaces_itself(tmp_path):
    lines = valid_lines()
    trial = json.loads(lines[2])["trial"]
    refused(
        tmp_path,
        reseal(with_field(lines, 2, "replaces", trial)),
        "line 3, field 'replaces': a trial cannot replace itself",
    )


def test_it_refuses_a_duplicate_seq_by_the_order_of_the_lines(tmp_path):
    lines = valid_lines()
    lines = reseal(with_field(lines, 5, "seq", json.loads(lines[4])["seq"]))
    refused(tmp_path, lines, r"line 6, field 'seq': \d+ is not greater than the previous trial's")


def test_it_refuses_a_duplicate_trial_id_at_its_line(tmp_path):
    lines = valid_lines()
    lines = reseal(with_field(lines, 30, "trial", json.loads(lines[7])["trial"]))
    refused(
        tmp_path,
        lines,
        "line 31, field 'trial': this trial id is already in the database or earlier",
    )


def test_it_refuses_a_duplicate_trial_line(tmp_path):
    lines = valid_lines()
    lines = reseal([*lines[:8], lines[7], *lines[8:]])
    refused(tmp_path, lines, r"line 9, field 'seq'")


def test_it_refuses_a_version_2_file_cut_at_a_line_boundary(tmp_path):
    lines = valid_lines()[:-10]
    refused(
        tmp_path, lines, f"line {len(lines)}: the file ends without its trailer line: it was cut"
    )


def test_it_refuses_a_trailer_whose_count_or_digest_does_not_match(tmp_path):
    lines = valid_lines()
    trailer = json.loads(lines[-1])
    counted = [*lines[:-1], json.dumps({**trailer, "trials": trailer["trials"] + 1}) + "\n"]
    refused(tmp_path, counted, f"line {len(lines)}, field 'trials': the trailer counts")
    changed = with_field(lines, 4, "cause", "edited")
    refused(
        tmp_path, changed, f"line {len(lines)}, field 'sha256': does not match the bytes before"
    )


def test_it_refuses_lines_after_the_trailer(tmp_path):
    lines = valid_lines()
    refused(tmp_path, [*lines, lines[3]], f"line {len(lines) + 1}: nothing may follow the trailer")


def test_it_reads_version_1_with_a_warning_that_a_cut_cannot_be_detected(tmp_path):
    lines = with_field(valid_lines()[:-1], 0, "schema_version", 1)
    result = import_jsonl(write(tmp_path / "v1.jsonl", lines))
    assert result.trials == len(lines) - 1
    assert "a file cut at a line boundary cannot be detected" in result.warnings[0]


def test_it_refuses_a_line_longer_than_the_limit_at_its_number(tmp_path):
    lines = reseal(with_field(valid_lines(), 6, "cause", "c" * MAX_LINE_BYTES))
    refused(tmp_path, lines, f"line 7: longer than {MAX_LINE_BYTES:,} bytes")


def test_it_refuses_a_line_nested_too_deeply(tmp_path):
    lines = valid_lines()
    deep = "[" * 5000 + "]" * 5000
    lines[2] = lines[2].replace('"placement":{', '"placement":{"deep":' + deep + ",")
    refused(tmp_path, lines, "line 3: not valid here: nested too deeply")


def test_it_refuses_a_file_that_is_not_utf8(tmp_path):
    path = tmp_path / "run.jsonl"
    data = "".join(valid_lines()).encode()
    path.write_bytes(data.replace(b"job-alpha", b"job-\xff\xfe", 1))
    with pytest.raises(RawDataError, match=r"run.jsonl, line \d+: not valid JSON \(invalid UTF-8"):
        import_jsonl(path)
    assert_nothing_written()


def test_the_command_refuses_with_the_message_and_writes_nothing(tmp_path):
    lines = reseal(with_field(valid_lines(), 2, "seq", -4))
    with pytest.raises(CommandError, match=r"line 3, field 'seq': expected `int` >= 1"):
        call_command("bench", "import", str(write(tmp_path / "run.jsonl", lines)))
    assert_nothing_written()


def test_it_refuses_a_timed_trial_of_a_run_that_never_started(tmp_path):
    lines = reseal(with_field(valid_lines(), 0, "run.started_at", None))
    refused(tmp_path, lines, r"line 2, field 'started_at': is set, but the run has no started_at")


def test_it_imports_a_trial_with_an_end_but_no_start(tmp_path):
    lines = reseal(with_field(valid_lines(), 2, "started_at", None))
    result = import_jsonl(write(tmp_path / "run.jsonl", lines))
    assert result.trials == len(lines) - 2


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL roles")
def test_a_role_that_may_not_skip_triggers_imports_the_same_rows(tmp_path):
    """Without the privilege to set session_replication_role the triggers run: same result."""
    with connection.cursor() as cursor:
        cursor.execute("CREATE ROLE rawdata_plain_importer NOSUPERUSER")
        cursor.execute("GRANT ALL ON ALL TABLES IN SCHEMA public TO rawdata_plain_importer")
        cursor.execute("GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO rawdata_plain_importer")
        cursor.execute("SET ROLE rawdata_plain_importer")
        try:
            lines = valid_lines()
            result = import_jsonl(write(tmp_path / "run.jsonl", lines))
            cursor.execute("SHOW session_replication_role")
            assert cursor.fetchone()[0] == "origin"
        finally:
            cursor.execute("RESET ROLE")
    assert result.trials == Trial.objects.count() == len(lines) - 2
