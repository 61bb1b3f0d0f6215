"""The public form of the raw data (docs/raw-data.md, "Two forms"): successful trials without
replacement links, the other attempts counted per (benchmark, unit, provider); its import, its
round trip, and what import refuses in it."""

import hashlib
import io
import json
from collections import defaultdict

import pytest
from defusedcsv import csv

from bench.synthetic import synthetic_run
from boxbench.models import Run, Trial, UnsuccessfulCount
from boxbench.rawdata import FULL, PUBLIC, RawDataError, export_csv, export_jsonl, import_jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(tmp_path):
    """The synthetic run (version 2, every trial: failures, replacements, a cut-short trial)."""
    lines = list(synthetic_run(trials=90, seed=3))
    index = next(i for i, line in enumerate(lines) if '"provider_failure"' in line)
    record = json.loads(lines[index])
    record["cause"] = "cut short: worker lost"
    lines[index] = json.dumps(record) + "\n"
    path = tmp_path / "full.jsonl"
    path.write_text("".join(seal(lines[:-1])))
    return import_jsonl(path).run


def seal(lines: list[str]) -> list[str]:
    """The lines with a trailer counting their trial lines and covering every byte."""
    trials = sum('"type": "trial"' in line or '"type":"trial"' in line for line in lines)
    digest = hashlib.sha256("".join(lines).encode()).hexdigest()
    return [*lines, json.dumps({"type": "end", "trials": trials, "sha256": digest}) + "\n"]


def decoded(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def counted_by_hand(full: list[dict]) -> dict:
    """What the counts lines must say, from the full file's trial lines."""
    trials = [line for line in full if line["type"] == "trial"]
    replaced = {t["replaces"] for t in trials if t["replaces"]}
    cells = defaultdict(lambda: {"outcomes": defaultdict(int), "unreplaced": 0})
    for t in trials:
        if t["outcome"] == "success":
            continue
        cell = cells[(t["benchmark"], t["unit"], t["provider"])]
        cell["outcomes"][t["outcome"]] += 1
        # A cut-short trial is a failure top-ups could not replace: it counts.
        if t["outcome"] == "provider_failure" and t["trial"] not in replaced:
            cell["unreplaced"] += 1
    return {k: (dict(v["outcomes"]), v["unreplaced"]) for k, v in cells.items()}


def test_the_public_form_holds_the_successes_and_counts_the_rest(run):
    full = decoded("".join(export_jsonl(run, FULL)))
    public = decoded("".join(export_jsonl(run, PUBLIC)))
    assert (full[0]["form"], public[0]["form"]) == ("full", "public")
    successes = [t for t in full if t["type"] == "trial" and t["outcome"] == "success"]
    trials = [t for t in public if t["type"] == "trial"]
    assert [t["trial"] for t in trials] == [t["trial"] for t in successes]
    assert all(t["replaces"] is None for t in trials)
    assert any(t["replaces"] for t in successes)  # links the full form keeps
    counts = {
        (c["benchmark"], c["unit"], c["provider"]): (
            c["outcomes"],
            c["unreplaced_provider_failures"],
        )
        for c in public
        if c["type"] == "counts"
    }
    expected = counted_by_hand(full)
    assert counts == expected and len(expected) > 1
    assert any(
        unreplaced < outcomes["provider_failure"] for outcomes, unreplaced in counts.values()
    )
    assert public[-1]["trials"] == len(trials)


def test_the_public_csv_holds_the_successful_trials_only(run):
    rows = list(csv.DictReader(io.StringIO("".join(export_csv(run, PUBLIC)))))
    assert len(rows) == Trial.objects.filter(outcome="success").count()
    assert {r["outcome"] for r in rows} == {"success"} and {r["replaces"] for r in rows} == {""}
    assert len(list(csv.reader(io.StringIO("".join(export_csv(run, FULL)))))) - 1 == (
        Trial.objects.count()
    )


def test_a_public_file_round_trips_and_its_counts_stay_counts(tmp_path, run):
    text = "".join(export_jsonl(run, PUBLIC))
    Run.objects.all().delete()
    path = tmp_path / "public.jsonl"
    path.write_text(text)
    result = import_jsonl(path)
    assert result.form == "public"
    assert Trial.objects.exclude(outcome="success").count() == 0  # no trial is invented
    stored = UnsuccessfulCount.objects.filter(run=result.run)
    assert result.counted == sum(n for c in stored for n in c.outcomes.values()) > 0
    assert "".join(export_jsonl(result.run, PUBLIC)) == text
    # The full form of such a run holds what the database has: the successes, and counts.
    again = decoded("".join(export_jsonl(result.run, FULL)))
    assert again[0]["form"] == "full"
    assert {line["type"] for line in again[1:-1]} == {"trial", "counts", "reliability"}
    assert [line for line in again if line["type"] == "counts"] == [
        line for line in decoded(text) if line["type"] == "counts"
    ]


@pytest.fixture
def public_lines(run) -> list[str]:
    """The run's public file, without its trailer, and an empty database to import it into."""
    lines = "".join(export_jsonl(run, PUBLIC)).splitlines(keepends=True)[:-1]
    Run.objects.all().delete()
    return lines


def changed(lines: list[str], index: int, **fields) -> list[str]:
    record = json.loads(lines[index])
    record.update(fields)
    return [*lines[:index], json.dumps(record) + "\n", *lines[index + 1 :]]


def first(lines: list[str], kind: str) -> int:
    return next(i for i, line in enumerate(lines) if json.loads(line)["type"] == kind)


def refused(tmp_path, lines: list[str], match: str):
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(seal(lines)))
    with pytest.raises(RawDataError, match=match):
        import_jsonl(path)
    assert not Run.objects.exists() and not UnsuccessfulCount.objects.exists()


def test_it_refuses_an_unsuccessful_trial_or_a_link_in_a_public_file(tmp_path, public_lines):
    trial = first(public_lines, "trial")
    refused(
        tmp_path,
        changed(public_lines, trial, outcome="provider_failure", owner="provider"),
        rf"line {trial + 1}, field 'outcome': 'provider_failure' in a public file",
    )
    refused(
        tmp_path,
        changed(public_lines, trial, replaces="00000000-0000-4000-8000-000000000000"),
        rf"line {trial + 1}, field 'replaces': a public file carries no replacement links",
    )


def test_it_refuses_counts_that_do_not_add_up(tmp_path, public_lines):
    at = first(public_lines, "counts")
    line = json.loads(public_lines[at])
    failures = line["outcomes"].get("provider_failure", 0)
    refused(
        tmp_path,
        changed(public_lines, at, unreplaced_provider_failures=failures + 1),
        rf"line {at + 1}, field 'unreplaced_provider_failures': {failures + 1} is more than",
    )
    refused(tmp_path, changed(public_lines, at, outcomes={}), "field 'outcomes': counts no outcome")
    refused(
        tmp_path,
        changed(public_lines, at, outcomes={"success": 3}),
        r"field 'outcomes.*': .*success",
    )
    refused(
        tmp_path,
        changed(public_lines, at, provider="nobody"),
        rf"line {at + 1}, field 'provider': 'nobody' is not in the run header",
    )
    twice = [*public_lines[: at + 1], public_lines[at], *public_lines[at + 1 :]]
    refused(tmp_path, twice, rf"line {at + 2}, field 'provider': a second counts line")


def test_it_refuses_a_trial_after_the_counts(tmp_path, public_lines):
    trial, at = first(public_lines, "trial"), first(public_lines, "counts")
    last = json.loads(public_lines[at - 1])
    moved = changed(public_lines, trial, seq=last["seq"] + 1)
    moved = [*moved[:trial], *moved[trial + 1 :], moved[trial]]
    refused(tmp_path, moved, "trial lines come before the counts and reliability lines")


def test_it_refuses_counts_and_a_form_in_an_older_version(tmp_path, public_lines):
    version_2 = changed(public_lines, 0, schema_version=2)
    refused(tmp_path, version_2, "line 1, field 'form': a version-2 file has no form")
    header = json.loads(version_2[0])
    del header["form"]
    without_form = [json.dumps(header) + "\n", *version_2[1:]]
    at = first(public_lines, "counts")
    refused(tmp_path, without_form, rf"line {at + 1}, field 'type': counts lines are a version-3")
