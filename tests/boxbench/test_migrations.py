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
                    id=uuid.uuid4(),
                    run=run,
                    benchmark=benchmark,
                    unit=unit,
                    provider=provider,
                    round=1,
                    seq=seq,
                    state="done",
                    outcome="success",
                )
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


BEFORE_0012 = [("boxbench", "0011_measurement_run_seq")]
AFTER_0012 = [("boxbench", "0012_trial_measurements")]


def _models(apps, *names):
    return [apps.get_model("boxbench", name) for name in names]


def _tally(apps, run) -> int:
    (TrialTally,) = _models(apps, "TrialTally")
    return sum(TrialTally.objects.filter(run_id=run.id).values_list("n", flat=True))


@pytest.mark.django_db(transaction=True)
def test_measurements_move_into_their_trials_rows_and_back():
    apps = migrate(BEFORE_0012)
    try:
        Run, Trial, Measurement, Provider, Benchmark, Unit = _models(
            apps, "Run", "Trial", "Measurement", "Provider", "Benchmark", "Unit"
        )
        provider = Provider.objects.create(slug="old", name="old")
        benchmark = Benchmark.objects.create(
            slug="old-deepswe", title="old", section="workload", metric="tool_time", clock="guest"
        )
        unit = Unit.objects.create(benchmark=benchmark, slug="default")
        run = Run.objects.create(id=uuid.uuid4(), name="before 0012")
        stored = [  # kind, name, value, unit, clock, gate
            ("metric", "tool_time", 12.5, "ms", "guest", "pass"),
            ("metric", "total", 20.0, "ms", "job_host", ""),
            ("stage", "tests", None, "ms", "guest", "fail"),
        ]
        trials = []
        for seq in (1, 2):
            trial = Trial.objects.create(
                id=uuid.uuid4(),
                run=run,
                benchmark=benchmark,
                unit=unit,
                provider=provider,
                round=1,
                seq=seq,
                state="done",
                outcome="success",
            )
            trials.append(trial.id)
            for kind, name, value, unit_name, clock, gate in stored[: 1 + seq]:
                Measurement.objects.create(
                    trial=trial,
                    run=run,
                    seq=seq,
                    kind=kind,
                    name=name,
                    value=value,
                    unit=unit_name,
                    clock=clock,
                    clock_gate=gate,
                )
        empty = Trial.objects.create(
            id=uuid.uuid4(),
            run=run,
            benchmark=benchmark,
            unit=unit,
            provider=provider,
            round=1,
            seq=3,
            state="done",
            outcome="success",
        )

        apps = migrate(AFTER_0012)
        Trial, MeasurementName = _models(apps, "Trial", "MeasurementName")
        rows = {t.id: t for t in Trial.objects.all()}
        assert rows[trials[0]].metrics == {"tool_time": 12.5, "total": 20.0}
        assert rows[trials[0]].stages == {}
        assert rows[trials[0]].clock_gates == {"metrics": {"tool_time": "pass"}}
        assert rows[trials[1]].stages == {"tests": None}
        assert rows[trials[1]].clock_gates == {
            "metrics": {"tool_time": "pass"},
            "stages": {"tests": "fail"},
        }
        assert (rows[empty.id].metrics, rows[empty.id].stages) == ({}, {})
        assert rows[empty.id].clock_gates is None
        names = MeasurementName.objects.values_list("kind", "name", "unit", "clock")
        assert sorted(names) == sorted((k, n, u, c) for k, n, _, u, c, _ in stored)
        # The trial table was rebuilt on SQLite: its tally triggers are there again.
        before = _tally(apps, run)
        Trial.objects.create(
            id=uuid.uuid4(),
            run_id=run.id,
            benchmark_id=benchmark.id,
            unit_id=unit.id,
            provider_id=provider.id,
            round=1,
            seq=4,
        )
        assert _tally(apps, run) == before + 1

        apps = migrate(BEFORE_0012)
        (Measurement,) = _models(apps, "Measurement")
        back = Measurement.objects.values_list(
            "trial_id", "seq", "kind", "name", "value", "unit", "clock", "clock_gate"
        )
        assert sorted(back, key=str) == sorted(
            [(trials[0], 1, *m) for m in stored[:2]] + [(trials[1], 2, *m) for m in stored],
            key=str,
        )
        before = _tally(apps, run)
        apps.get_model("boxbench", "Trial").objects.filter(seq=4).delete()
        assert _tally(apps, run) == before - 1
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


BEFORE_0013 = [("boxbench", "0012_trial_measurements")]
AFTER_0013 = [("boxbench", "0013_manifest_chain_status")]


@pytest.mark.django_db(transaction=True)
def test_a_chains_status_leaves_the_manifests_of_runs_planned_here_and_comes_back():
    def chains(*states):
        providers = "abc"[: len(states)]
        return {
            p: {"order": [["create", 1]], "status": s}
            for p, s in zip(providers, states, strict=True)
        }

    apps = migrate(BEFORE_0013)
    try:
        Run, RunTransition, ChainProgress = _models(apps, "Run", "RunTransition", "ChainProgress")
        planned = Run.objects.create(
            id=uuid.uuid4(),
            name="planned here",
            status="running",
            manifest={"seed": 1, "chains": chains("done", "running", "planned")},
        )
        ChainProgress.objects.create(run=planned, provider="a", job_host="h", state="done")
        ChainProgress.objects.create(run=planned, provider="b", job_host="h", state="waiting")
        given = {"seed": 2, "chains": chains("done")}
        imported = Run.objects.create(
            id=uuid.uuid4(), name="imported", status="completed", manifest=given
        )
        RunTransition.objects.create(
            run=imported, from_status="planned", to_status="completed", note="imported from f"
        )
        bare = Run.objects.create(id=uuid.uuid4(), name="no chains", manifest={"seed": 3})

        apps = migrate(AFTER_0013)
        (Run,) = _models(apps, "Run")
        assert Run.objects.get(pk=planned.pk).manifest == {
            "seed": 1,
            "chains": {p: {"order": [["create", 1]]} for p in "abc"},
        }
        assert Run.objects.get(pk=imported.pk).manifest == given  # kept as the file gave it
        assert Run.objects.get(pk=bare.pk).manifest == {"seed": 3}

        apps = migrate(BEFORE_0013)
        (Run,) = _models(apps, "Run")
        assert Run.objects.get(pk=planned.pk).manifest["chains"] == chains(
            "done", "running", "planned"
        )
        assert Run.objects.get(pk=imported.pk).manifest == given
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
