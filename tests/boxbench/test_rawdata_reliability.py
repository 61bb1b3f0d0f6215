"""The reliability lines of the raw data (docs/raw-data.md): each provider's attempts and
failures per operation, carried by both forms, stored as the imported run's counts, and what
import refuses in them."""

import hashlib
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.synthetic import synthetic_run
from boxbench.leaderboard.reliability import run_counts, store_counts
from boxbench.models import Run, RunReliability, Trial, UnsuccessfulCount
from boxbench.rawdata import FULL, PUBLIC, RawDataError, export_jsonl, import_jsonl
from tests.boxbench.rawdata_files import HOSTILE, field_paths, with_field, write

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(tmp_path):
    """The synthetic run (every trial: failures of providers and of the benchmark)."""
    return import_jsonl(write(tmp_path / "full.jsonl", list(synthetic_run(trials=90, seed=3)))).run


def lines_of(run, form: str = PUBLIC) -> list[str]:
    return "".join(export_jsonl(run, form)).splitlines(keepends=True)


def typed(lines: list[str], kind: str) -> list[int]:
    return [i for i, line in enumerate(lines) if json.loads(line)["type"] == kind]


def reseal(lines: list[str]) -> list[str]:
    """The lines with their trailer recomputed over the trial lines and every byte before it."""
    body = [line for line in lines if json.loads(line)["type"] != "end"]
    digest = hashlib.sha256("".join(body).encode()).hexdigest()
    trials = len(typed(body, "trial"))
    return [*body, json.dumps({"type": "end", "trials": trials, "sha256": digest}) + "\n"]


@pytest.fixture
def public_lines(run) -> list[str]:
    """The run's public file, and an empty database to import it into."""
    lines = lines_of(run)
    Run.objects.all().delete()
    return lines


def nothing_written():
    return not (
        Run.objects.exists()
        or Trial.objects.exists()
        or UnsuccessfulCount.objects.exists()
        or RunReliability.objects.exists()
    )


def refused(tmp_path, lines: list[str], match: str) -> str:
    with pytest.raises(RawDataError, match=match) as caught:
        import_jsonl(write(tmp_path / "bad.jsonl", reseal(lines)))
    assert nothing_written()
    return str(caught.value)


@pytest.mark.parametrize("form", [PUBLIC, FULL])
def test_both_forms_carry_what_the_reliability_page_counts(run, form):
    lines = [json.loads(line) for line in lines_of(run, form)]
    reliability = {line["provider"]: line for line in lines if line["type"] == "reliability"}
    expected = run_counts(run)
    assert {
        slug: {"operations": line["operations"], "unplaced": line["unplaced"]}
        for slug, line in reliability.items()
    } == expected
    assert any(
        entry["failures"] for counts in expected.values() for entry in counts["operations"].values()
    )
    assert list(reliability) == sorted(reliability)
    assert {p["slug"] for p in lines[0]["providers"]} >= set(reliability)
    # Counts only: the causes the classes were read from stay in private evidence.
    causes = set(Trial.objects.exclude(cause="").values_list("cause", flat=True))
    text = json.dumps([line for line in lines if line["type"] == "reliability"])
    assert causes and not any(cause in text for cause in causes)


def test_a_published_run_exports_the_counts_its_publication_stored(run):
    store_counts([run])
    stored = RunReliability.objects.get(run=run)
    stored.counts = {slug: {**c, "unplaced": 7} for slug, c in stored.counts.items()}
    stored.save()
    lines = [json.loads(line) for line in lines_of(run)]
    assert {line["unplaced"] for line in lines if line["type"] == "reliability"} == {7}


def test_an_imported_public_file_keeps_the_runs_reliability_counts(tmp_path, run):
    original = run_counts(run)
    text = "".join(export_jsonl(run, PUBLIC))
    Run.objects.all().delete()
    result = import_jsonl(write(tmp_path / "public.jsonl", [text]))
    assert result.warnings == []
    assert RunReliability.objects.get(run=result.run).counts == original
    # Its publication keeps them: a recount would find the failures only as counts, unplaced.
    assert run_counts(result.run) != original
    store_counts([result.run])
    assert RunReliability.objects.get(run=result.run).counts == original
    assert "".join(export_jsonl(result.run, PUBLIC)) == text


def test_an_older_public_file_imports_and_says_its_failures_are_unplaced(tmp_path, public_lines):
    older = [
        line
        for i, line in enumerate(with_field(public_lines, 0, "schema_version", 5))
        if i not in typed(public_lines, "reliability")
    ]
    failures = sum(
        n
        for i in typed(public_lines, "counts")
        for outcome, n in json.loads(public_lines[i])["outcomes"].items()
        if outcome in ("provider_failure", "benchmark_error")
    )
    path = write(tmp_path / "v5.jsonl", reseal(older))
    result = import_jsonl(path)
    assert result.warnings == [
        f"{path}: schema version 5 has no reliability lines, so the {failures} failed attempts "
        "its counts lines hold are on the Reliability page without their operation or cause "
        "class; a version-6 export of the run carries them"
    ]
    assert not RunReliability.objects.exists()
    store_counts([result.run])
    counts = RunReliability.objects.get(run=result.run).counts
    assert sum(c["unplaced"] for c in counts.values()) == failures > 0


def first_reliability(lines: list[str]) -> tuple[int, dict]:
    at = typed(lines, "reliability")[0]
    return at, json.loads(lines[at])


def replaced(lines: list[str], at: int, record: dict) -> list[str]:
    return [*lines[:at], json.dumps(record) + "\n", *lines[at + 1 :]]


def operation_with_failures(record: dict) -> str:
    return next(op for op, entry in record["operations"].items() if entry["failures"])


HOSTILE_CHANGES = [
    (
        "an unknown operation",
        lambda r, op: {**r, "operations": {**r["operations"], "boot": r["operations"][op]}},
        r"field 'operations \(a key\)': invalid enum value 'boot'",
    ),
    (
        "an unknown owner",
        lambda r, op: with_path(r, ["operations", op, "failures"], {"vendor": {"other": 1}}),
        r"field 'operations.{op}.failures \(a key\)': invalid enum value 'vendor'",
    ),
    (
        "an unknown cause class",
        lambda r, op: with_path(r, ["operations", op, "failures"], {"provider": {"gremlins": 1}}),
        r"field 'operations.{op}.failures.provider \(a key\)': invalid enum value 'gremlins'",
    ),
    (
        "a negative attempt count",
        lambda r, op: with_path(r, ["operations", op, "attempts"], -3),
        r"field 'operations.{op}.attempts': expected `int` >= 1",
    ),
    (
        "a huge attempt count",
        lambda r, op: with_path(r, ["operations", op, "attempts"], 1 << 63),
        r"field 'operations.{op}.attempts': expected `int` <= 2147483647",
    ),
    (
        "a failure count of zero",
        lambda r, op: with_path(r, ["operations", op, "failures"], {"provider": {"other": 0}}),
        r"field 'operations.{op}.failures.provider.other': expected `int` >= 1",
    ),
    (
        "a negative unplaced count",
        lambda r, op: {**r, "unplaced": -1},
        r"field 'unplaced': expected `int` >= 0",
    ),
    (
        "an attempt count as text",
        lambda r, op: with_path(r, ["operations", op, "attempts"], "12"),
        r"field 'operations.{op}.attempts': expected `int`, got `str`",
    ),
    (
        "more failures than attempts",
        lambda r, op: with_path(r, ["operations", op, "failures"], {"provider": {"other": 10**6}}),
        r"field 'operations.{op}.failures': 1000000 failed attempts are more than the \d+ "
        r"attempts",
    ),
    (
        "an owner without a cause class",
        lambda r, op: with_path(r, ["operations", op, "failures"], {"provider": {}}),
        r"field 'operations.{op}.failures.provider': counts no cause class",
    ),
    (
        "a provider the file does not declare",
        lambda r, op: {**r, "provider": "nobody"},
        r"field 'provider': 'nobody' is not in the run header",
    ),
    (
        "a field the format does not have",
        lambda r, op: {**r, "cause": "sandbox stopped answering"},
        r"field 'cause': is not a field of the format",
    ),
]


def with_path(record: dict, path: list[str], value) -> dict:
    changed = json.loads(json.dumps(record))
    target = changed
    for name in path[:-1]:
        target = target[name]
    target[path[-1]] = value
    return changed


@pytest.mark.parametrize(
    ("change", "match"), [c[1:] for c in HOSTILE_CHANGES], ids=[c[0] for c in HOSTILE_CHANGES]
)
def test_it_refuses_a_hostile_reliability_line_naming_line_and_field(
    tmp_path, public_lines, change, match
):
    at, record = first_reliability(public_lines)
    op = operation_with_failures(record)
    lines = replaced(public_lines, at, change(record, op))
    refused(tmp_path, lines, rf"line {at + 1}, " + match.replace("{op}", op))


def test_it_refuses_reliability_lines_out_of_place(tmp_path, public_lines):
    at, _ = first_reliability(public_lines)
    refused(
        tmp_path,
        [*public_lines[: at + 1], public_lines[at], *public_lines[at + 1 : -1]],
        rf"line {at + 2}, field 'provider': a second reliability line for this provider",
    )
    counts = typed(public_lines, "counts")[-1]
    swapped = [*public_lines[:counts], public_lines[at], public_lines[counts]]
    swapped += [line for i, line in enumerate(public_lines[:-1]) if i > counts and i != at]
    refused(
        tmp_path,
        swapped,
        rf"line {counts + 2}, field 'type': counts lines come before the reliability lines",
    )
    older = with_field(public_lines, 0, "schema_version", 5)
    refused(
        tmp_path,
        older[:-1],
        rf"line {at + 1}, field 'type': reliability lines are a version-6 line; this file is "
        "older",
    )


def test_it_refuses_a_file_without_a_providers_reliability_line(tmp_path, public_lines):
    at, record = first_reliability(public_lines)
    lines = reseal([line for i, line in enumerate(public_lines[:-1]) if i != at])
    message = refused(
        tmp_path,
        lines,
        rf"line {len(lines)}: provider '{record['provider']}' has trial or counts lines but no "
        "reliability line",
    )
    assert message.startswith(str(tmp_path / "bad.jsonl"))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_fuzzed_reliability_line_imports_or_is_refused_at_its_line(tmp_path, public_lines, data):
    at, record = first_reliability(public_lines)
    path = data.draw(st.sampled_from(field_paths(record)))
    value = data.draw(st.sampled_from(HOSTILE) | st.integers() | st.text(max_size=20))
    lines = reseal(with_field(public_lines, at, path, value))
    target = write(tmp_path / "fuzzed.jsonl", lines)
    try:
        result = import_jsonl(target)
    except RawDataError as exc:
        assert re.match(rf"{re.escape(str(target))}, line \d+(, field '[^']+')?: \S", str(exc))
        assert nothing_written(), str(exc)
        return
    # Accepted: then it is stored exactly as the line gives it.
    stored = RunReliability.objects.get(run=result.run).counts
    line = json.loads(lines[at])
    assert stored[line["provider"]] == {
        "operations": line["operations"],
        "unplaced": line["unplaced"],
    }
    Run.objects.all().delete()
