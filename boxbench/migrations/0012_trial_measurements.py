"""A trial's measurements move into its own row (metrics, stages, clock_gates) and the unit and
clock of each name into MeasurementName, one row per run, benchmark and name; the Measurement
table goes.

Adding the columns rebuilds boxbench_trial on SQLite, which drops its tally triggers (0009): they
are created again after each rebuild, forwards and backwards.
"""

import importlib

import django.db.models.deletion
from django.db import migrations, models

TALLY = importlib.import_module("boxbench.migrations.0009_trial_tally")

# One statement on PostgreSQL; elsewhere the rows are grouped here.
POSTGRESQL_FILL = """
UPDATE boxbench_trial t SET metrics = m.metrics, stages = m.stages, clock_gates = m.gates
FROM (
  SELECT trial_id,
    coalesce(jsonb_object_agg(name, value) FILTER (WHERE kind = 'metric'), '{}') AS metrics,
    coalesce(jsonb_object_agg(name, value) FILTER (WHERE kind = 'stage'), '{}') AS stages,
    nullif(jsonb_strip_nulls(jsonb_build_object(
      'metrics', jsonb_object_agg(name, clock_gate) FILTER (WHERE kind = 'metric' AND clock_gate <> ''),
      'stages', jsonb_object_agg(name, clock_gate) FILTER (WHERE kind = 'stage' AND clock_gate <> '')
    )), '{}') AS gates
  FROM boxbench_measurement GROUP BY trial_id
) AS m
WHERE t.id = m.trial_id
"""
# A name stored with two units or clocks (which the export refused) keeps the smallest of each.
NAMES_FILL = """
INSERT INTO boxbench_measurementname (run_id, benchmark_id, kind, name, unit, clock)
SELECT m.run_id, t.benchmark_id, m.kind, m.name, min(m.unit), min(m.clock)
FROM boxbench_measurement m JOIN boxbench_trial t ON t.id = m.trial_id
GROUP BY m.run_id, t.benchmark_id, m.kind, m.name
"""
GROUPS = {"metric": "metrics", "stage": "stages"}
BATCH = 2000


def tally_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in [*TALLY.SQLITE_DROP, *TALLY.SQLITE]:
            schema_editor.execute(statement, params=None)


def fill(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        cursor.execute(NAMES_FILL)
        if connection.vendor == "postgresql":
            cursor.execute(POSTGRESQL_FILL)
            return
    Measurement = apps.get_model("boxbench", "Measurement")
    Trial = apps.get_model("boxbench", "Trial")
    rows = Measurement.objects.order_by("trial_id").values_list(
        "trial_id", "kind", "name", "value", "clock_gate"
    )
    fields = ["metrics", "stages", "clock_gates"]
    # In trial order, a trial at a time: memory stays that of one batch, whatever the store's size.
    batch, trial = [], None
    for trial_id, kind, name, value, gate in rows.iterator(chunk_size=BATCH):
        if trial is None or trial.id != trial_id:
            if len(batch) >= BATCH:
                Trial.objects.bulk_update(batch, fields)
                batch = []
            trial = Trial(id=trial_id, metrics={}, stages={}, clock_gates=None)
            batch.append(trial)
        group = GROUPS[kind]
        getattr(trial, group)[name] = value
        if gate:
            if trial.clock_gates is None:
                trial.clock_gates = {}
            trial.clock_gates.setdefault(group, {})[name] = gate
    Trial.objects.bulk_update(batch, fields)


def unfill(apps, schema_editor):
    Measurement = apps.get_model("boxbench", "Measurement")
    MeasurementName = apps.get_model("boxbench", "MeasurementName")
    Trial = apps.get_model("boxbench", "Trial")
    declared = {
        (run, benchmark, kind, name): (unit, clock)
        for run, benchmark, kind, name, unit, clock in MeasurementName.objects.values_list(
            "run_id", "benchmark_id", "kind", "name", "unit", "clock"
        )
    }
    trials = Trial.objects.values_list(
        "id", "run_id", "seq", "benchmark_id", "metrics", "stages", "clock_gates"
    )
    batch = []
    for trial_id, run, seq, benchmark, metrics, stages, gates in trials.iterator(BATCH):
        for kind, values in (("metric", metrics), ("stage", stages)):
            gated = (gates or {}).get(GROUPS[kind], {})
            for name, value in (values or {}).items():
                unit, clock = declared.get((run, benchmark, kind, name), ("ms", "job_host"))
                batch.append(
                    Measurement(
                        trial_id=trial_id, run_id=run, seq=seq, kind=kind, name=name,
                        value=value, unit=unit, clock=clock, clock_gate=gated.get(name, ""),
                    )
                )
        if len(batch) >= BATCH:
            Measurement.objects.bulk_create(batch)
            batch = []
    Measurement.objects.bulk_create(batch)


class Migration(migrations.Migration):
    dependencies = [
        ("boxbench", "0011_measurement_run_seq"),
    ]

    operations = [
        # Backwards this runs last, after the columns' removal rebuilt the table once more.
        migrations.RunPython(migrations.RunPython.noop, tally_triggers),
        migrations.AddField(
            model_name="trial", name="metrics", field=models.JSONField(blank=True, default=dict)
        ),
        migrations.AddField(
            model_name="trial", name="stages", field=models.JSONField(blank=True, default=dict)
        ),
        migrations.AddField(
            model_name="trial", name="clock_gates", field=models.JSONField(blank=True, null=True)
        ),
        migrations.RunPython(tally_triggers, migrations.RunPython.noop),
        migrations.CreateModel(
            name="MeasurementName",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("kind", models.CharField(choices=[("metric", "Metric"), ("stage", "Stage")], max_length=10)),
                ("name", models.CharField(max_length=80)),
                ("unit", models.CharField(default="ms", max_length=20)),
                ("clock", models.CharField(choices=[("job_host", "Job-host clock"), ("guest", "Sandbox clock")], max_length=10)),
                ("benchmark", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="boxbench.benchmark")),
                ("run", models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="measurement_names", to="boxbench.run")),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("run", "benchmark", "kind", "name"), name="measurement_name_uniq")
                ],
            },
        ),
        migrations.RunPython(fill, unfill),
        migrations.DeleteModel(name="Measurement"),
    ]
