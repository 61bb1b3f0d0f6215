"""Each measurement carries its trial's run and seq, and an index on them, so the export reads a
run's measurements in execution order along one index instead of probing per trial."""

import django.db.models.deletion
from django.db import migrations, models

# One statement each: an UPDATE joining the trial where the database has one (PostgreSQL,
# SQLite from 3.33), a correlated subquery elsewhere.
JOINED = """
UPDATE boxbench_measurement SET run_id = t.run_id, seq = t.seq
FROM boxbench_trial t WHERE t.id = boxbench_measurement.trial_id
"""
CORRELATED = """
UPDATE boxbench_measurement SET
  run_id = (SELECT t.run_id FROM boxbench_trial t WHERE t.id = boxbench_measurement.trial_id),
  seq = (SELECT t.seq FROM boxbench_trial t WHERE t.id = boxbench_measurement.trial_id)
"""


def copy_run_and_seq(apps, schema_editor):
    connection = schema_editor.connection
    joined = connection.vendor == "postgresql" or (
        connection.vendor == "sqlite" and connection.Database.sqlite_version_info >= (3, 33)
    )
    with connection.cursor() as cursor:
        cursor.execute(JOINED if joined else CORRELATED)


def run_field(**nullable):
    return models.ForeignKey(
        "boxbench.run",
        django.db.models.deletion.CASCADE,
        related_name="+",
        db_index=False,
        editable=False,
        **nullable,
    )


def seq_field(**nullable):
    return models.PositiveIntegerField(editable=False, **nullable)


class Migration(migrations.Migration):
    dependencies = [
        ("boxbench", "0010_unsuccessful_count"),
    ]

    operations = [
        migrations.AddField(model_name="measurement", name="run", field=run_field(null=True)),
        migrations.AddField(model_name="measurement", name="seq", field=seq_field(null=True)),
        migrations.RunPython(copy_run_and_seq, migrations.RunPython.noop),
        migrations.AlterField(model_name="measurement", name="run", field=run_field()),
        migrations.AlterField(model_name="measurement", name="seq", field=seq_field()),
        migrations.AddIndex(
            model_name="measurement",
            index=models.Index(fields=["run", "seq"], name="measurement_run_seq_idx"),
        ),
    ]
