"""Malformed raw-data files: a clean import or a refusal naming the line, never a traceback and
never a partial write. Runs on SQLite and, in the database pass, on PostgreSQL."""

import json
import re
import traceback

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boxbench.models import Benchmark, MeasurementName, Provider, Run, RunTransition, Trial, Unit
from boxbench.rawdata import RawDataError, import_jsonl
from tests.boxbench.rawdata_files import (
    HOSTILE,
    corpus,
    field_paths,
    reseal,
    valid_lines,
    with_field,
)

pytestmark = pytest.mark.django_db

MODELS = (Run, RunTransition, Provider, Benchmark, Unit, Trial, MeasurementName)
LINES = valid_lines(trials=20, seed=5)


def counts() -> tuple[int, ...]:
    return tuple(model.objects.count() for model in MODELS)


def attempt(path, data: bytes) -> tuple[str, bool]:
    """Import `data` inside a savepoint that is always undone: ('imported' or the refusal,
    whether a refusal left rows behind). Anything but RawDataError escapes."""
    path.write_bytes(data)
    before = counts()
    with transaction.atomic():
        try:
            result = import_jsonl(path)
        except RawDataError as exc:
            return str(exc), counts() != before
        assert Trial.objects.count() - before[MODELS.index(Trial)] == result.trials
        transaction.set_rollback(True)
    return "imported", False


def empty(message: str, path) -> bool:
    return message == f"{path}: the file is empty; its first line must be the run header"


def located(message: str, path) -> re.Match | None:
    return re.match(rf"{re.escape(str(path))}, line \d+(?P<field>, field '[^']+')?: \S", message)


@st.composite
def mutated(draw) -> bytes:
    lines = list(LINES)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["field", "field", "field", "delete", "line", "cut"]))
        index = draw(st.integers(0, len(lines) - 1)) if lines else 0
        if kind in ("field", "delete") and lines:
            try:
                record = json.loads(lines[index])
            except ValueError:
                continue
            if not isinstance(record, dict) or not record:
                continue
            path = draw(st.sampled_from(field_paths(record)))
            value = draw(st.sampled_from(HOSTILE) | st.integers() | st.text(max_size=30))
            lines = with_field(lines, index, path, value, delete=kind == "delete")
        elif kind == "line" and lines:
            action = draw(st.sampled_from(["drop", "twice", "swap", "garbage"]))
            other = draw(st.integers(0, len(lines) - 1))
            if action == "drop":
                del lines[index]
            elif action == "twice":
                lines.insert(index, lines[index])
            elif action == "swap":
                lines[index], lines[other] = lines[other], lines[index]
            else:
                lines.insert(index, draw(st.text(max_size=40)).replace("\n", " ") + "\n")
        elif kind == "cut":
            text = "".join(lines)
            return text[: draw(st.integers(0, len(text)))].encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        lines = reseal(lines)  # so the checks past the digest are reached too
    return "".join(lines).encode("utf-8", "surrogatepass")


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=mutated())
def test_it_imports_or_refuses_naming_the_line_never_a_traceback(tmp_path, data):
    path = tmp_path / "fuzzed.jsonl"
    outcome, partial = attempt(path, data)
    assert not partial, f"rows left behind after: {outcome}"
    if outcome != "imported":
        assert empty(outcome, path) or located(outcome, path), outcome


def test_it_refuses_every_file_of_the_malformed_corpus(tmp_path, capsys):
    path = tmp_path / "malformed.jsonl"
    tried = with_field_named = with_line = whole_file = imported = tracebacks = partial = 0
    for name, data in corpus(LINES):
        tried += 1
        try:
            outcome, left = attempt(path, data)
        except Exception:  # noqa: BLE001 - a traceback is what the fuzz counts
            tracebacks += 1
            print(f"traceback for {name}:\n{traceback.format_exc()}")
            continue
        partial += left
        found = located(outcome, path)
        if outcome == "imported":
            imported += 1
            print(f"imported although malformed: {name}")
        elif found and found["field"]:
            with_field_named += 1
        elif found:
            with_line += 1
        elif empty(outcome, path):
            whole_file += 1
        else:
            print(f"refused without a line: {name}: {outcome}")
    with capsys.disabled():
        print(
            f"\nmalformed raw-data corpus on {connection.vendor}: {tried} tried, "
            f"{with_field_named + with_line} refused naming file and line "
            f"({with_field_named} also naming the field), {whole_file} empty files refused as "
            f"such, {imported} imported, {tracebacks} tracebacks, {partial} partial writes"
        )
    assert tracebacks == 0
    assert partial == 0
    assert imported == 0
    assert with_field_named + with_line + whole_file == tried
    assert tried >= 100
