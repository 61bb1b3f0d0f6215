"""Batch labels never shared by two runs: cleanup finds a run's sandboxes by its label prefix, so
a second run with the same prefix would take the first run's sandboxes for its own and destroy
them. The database holds each prefix once; planning and import are refused a taken one."""

import uuid

import pytest
from django.db import IntegrityError, transaction

from boxbench.models import Run, Trial
from boxbench.rawdata import RawDataError, import_jsonl
from runner import plan as plan_module
from runner.labels import batch_label, run_prefix
from runner.plan import PlanError, plan_run
from tests.boxbench.rawdata_files import reseal, valid_lines, with_field, write

pytestmark = pytest.mark.django_db


def twin(run_id: uuid.UUID) -> uuid.UUID:
    """Another id with the same leading digits (what a second host could draw, or an importer
    choose)."""
    return uuid.UUID(run_id.hex[:12] + uuid.uuid4().hex[12:])


def test_the_label_prefix_holds_the_id_digits_and_ends_before_the_provider():
    run_id = uuid.UUID("0123456789ab4def8123456789abcdef")
    assert run_prefix(run_id) == "bb-0123456789ab-"
    assert batch_label(run_id, "local", "create", 2) == "bb-0123456789ab-local-create-r2"


def test_a_second_host_cannot_store_a_run_with_taken_digits():
    first = Run.objects.create(name="first")
    with pytest.raises(IntegrityError), transaction.atomic():
        Run.objects.create(id=twin(first.id), name="second")
    assert list(Run.objects.values_list("pk", flat=True)) == [first.pk]


def test_planning_refuses_an_id_whose_digits_another_run_holds(monkeypatch):
    first = Run.objects.create(name="first")
    drawn = twin(first.id)
    monkeypatch.setattr(plan_module.uuid, "uuid4", lambda: drawn)
    with pytest.raises(PlanError, match=f"digits of run {first.id}"):
        plan_run("second", benchmarks=["create"], providers=["local"], trials=1, seed=1)
    assert list(Run.objects.values_list("pk", flat=True)) == [first.pk]
    assert not Trial.objects.exists()  # no half-planned run


def test_two_runs_planned_at_once_get_distinct_prefixes():
    runs = [
        plan_run(name, benchmarks=["create"], providers=["local"], trials=1, seed=1)
        for name in ("a", "b")
    ]
    batches = [set(Trial.objects.filter(run=run).values_list("batch", flat=True)) for run in runs]
    assert runs[0].label_prefix != runs[1].label_prefix
    assert all(b.startswith(run_prefix(runs[0].id)) for b in batches[0])
    assert not any(b.startswith(run_prefix(runs[0].id)) for b in batches[1])


def test_an_import_cannot_choose_an_id_with_a_local_runs_digits(tmp_path):
    local = Run.objects.create(name="local")
    lines = with_field(valid_lines(), 0, "run.id", str(twin(local.id)))
    path = write(tmp_path / "run.jsonl", reseal(lines))
    with pytest.raises(RawDataError, match=r"run\.id.*same 12 hex digits as run") as caught:
        import_jsonl(path)
    assert "line 1" in str(caught.value)
    assert list(Run.objects.values_list("pk", flat=True)) == [local.pk]
