"""`bench import` refuses what a hostile file could use against the pages and the runner: control,
format and bidi characters in names and texts, free text past its maximum, a run still going, and
a re-run of a run here."""

import json

import pytest

from boxbench.models import Run, Trial
from boxbench.rawdata import RawDataError, import_jsonl
from boxbench.rawdata.schema import MAX_FREE_TEXT
from tests.boxbench.rawdata_files import reseal, valid_lines, with_field, write

pytestmark = pytest.mark.django_db


def refused(tmp_path, lines, expected: str) -> str:
    path = write(tmp_path / "run.jsonl", reseal(lines))
    before = Trial.objects.count()
    with pytest.raises(RawDataError, match=expected) as caught:
        import_jsonl(path)
    assert Trial.objects.count() == before  # nothing written
    return str(caught.value)


def first_trial(lines) -> int:
    return next(i for i, line in enumerate(lines) if '"type":"trial"' in line)


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ("providers.0.name", "Fast\u202eregnillehs", r"providers\[0\]\.name.*U\+202E"),
        ("providers.0.region_note", "EU\u2066x\u2069", r"providers\[0\]\.region_note.*U\+2066"),
        ("benchmarks.0.title", "Cre\u200bate", r"benchmarks\[0\]\.title.*U\+200B"),
        ("benchmarks.0.units.0.title", "unit\x1b[31m", r"units\[0\]\.title.*U\+001B"),
        ("run.name", "night run\nSECOND LINE", r"run\.name.*U\+000A"),
        ("benchmarks.0.description", "a\u2028b", r"benchmarks\[0\]\.description.*U\+2028"),
    ],
)
def test_it_refuses_control_format_and_bidi_characters_in_the_header(tmp_path, path, value, named):
    message = refused(tmp_path, with_field(valid_lines(), 0, path, value), named)
    assert "line 1" in message and "refused" in message
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    ("field", "value"),
    [("cause", "HTTP 503\u202e"), ("batch", "b\u0085"), ("job_host", "host\u2029")],
)
def test_it_refuses_them_in_a_trial_line_naming_the_field(tmp_path, field, value):
    lines = valid_lines()
    index = first_trial(lines)
    message = refused(tmp_path, with_field(lines, index, field, value), rf"field '{field}'")
    assert f"line {index + 1}" in message


def test_a_cause_keeps_its_line_breaks_and_tabs(tmp_path):
    lines = valid_lines()
    index = first_trial(lines)
    cause = "create failed:\n\tHTTP 503 after deadline"
    path = write(tmp_path / "run.jsonl", reseal(with_field(lines, index, "cause", cause)))
    import_jsonl(path)
    trial_id = json.loads(lines[index])["trial"]
    assert Trial.objects.get(id=trial_id).cause == cause


def test_it_refuses_free_text_past_its_maximum(tmp_path):
    lines = valid_lines()
    index = first_trial(lines)
    too_long = "x" * (MAX_FREE_TEXT + 1)
    refused(tmp_path, with_field(lines, index, "cause", too_long), r"field 'cause'.*<= 4000")
    refused(tmp_path, with_field(lines, 0, "benchmarks.0.description", too_long), r"description")


@pytest.mark.parametrize("status", ["running", "planned", "cancelling"])
def test_it_imports_ended_runs_only(tmp_path, status):
    refused(tmp_path, with_field(valid_lines(), 0, "run.status", status), r"field 'run.status'")
    assert not Run.objects.exists()


def test_it_refuses_a_rerun_of_a_run_here(tmp_path, published_elsewhere):
    rerun_of = {"run": str(published_elsewhere.id), "provider": "a", "benchmark": "b"}
    lines = with_field(valid_lines(), 0, "manifest.rerun_of", rerun_of)
    refused(tmp_path, lines, r"field 'manifest.rerun_of': an imported run cannot be a re-run")
    assert list(Run.objects.all()) == [published_elsewhere]


@pytest.fixture
def published_elsewhere(tmp_path):
    lines = valid_lines(seed=5)
    path = write(tmp_path / "other.jsonl", lines)
    import_jsonl(path)
    return Run.objects.get()
