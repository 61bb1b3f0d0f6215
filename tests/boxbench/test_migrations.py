"""Migrations that move data: what was stored before them is whole after them."""

import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("boxbench", "0010_unsuccessful_count")]
AFTER = [("boxbench", "0011_measurement_run_seq")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_measurements_stored_before_0011_get_their_trials_run_and_seq():
    apps = migrate(BEFORE)
    try:
        Run, Trial, Measurement = (
            apps.get_model("boxbench", name) for name in ("Run", "Trial", "Measurement")
        )
        Provider, Benchmark, Unit = (
            apps.get_model("boxbench", name) for name in ("Provider", "Benchmark", "Unit")
        )
        provider = Provider.objects.create(slug="old", name="old")
        benchmark = Benchmark.objects.create(
            slug="old-create",
            title="old",
            section="sandbox_operations",
            metric="total",
            clock="job_host",
        )
        unit = Unit.objects.create(benchmark=benchmark, slug="default")
        runs = [Run.objects.create(id=uuid.uuid4(), name=f"before {i}") for i in range(2)]
        expected = {}
        for run in runs:
            for seq in (3, 1, 2):
                trial = Trial.objects.create(
                    id=uuid.uuid4(), run=run, benchmark=benchmark, unit=unit,
                    provider=provider, round=1, seq=seq, state="done", outcome="success",
                )  # fmt: skip
                for name in ("total", "boot"):
                    made = Measurement.objects.create(
                        trial=trial, kind="metric", name=name, value=1.0, clock="job_host"
                    )
                    expected[made.pk] = (run.id, seq)
        apps = migrate(AFTER)
        stored = apps.get_model("boxbench", "Measurement").objects.values_list(
            "pk", "run_id", "seq"
        )
        assert {pk: (run_id, seq) for pk, run_id, seq in stored} == expected
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
