"""A trial keeps a burst's per-request records (runner/benchmarks/burst.py).

Adding the column rebuilds boxbench_trial on SQLite, which drops its tally triggers (0009): they
are created again after the rebuild, forwards and backwards, as 0012 does.
"""

import importlib

from django.db import migrations, models

MEASUREMENTS = importlib.import_module("boxbench.migrations.0012_trial_measurements")


class Migration(migrations.Migration):
    dependencies = [
        ("boxbench", "0014_published_pairs"),
    ]

    operations = [
        # Backwards this runs last, after the column's removal rebuilt the table once more.
        migrations.RunPython(migrations.RunPython.noop, MEASUREMENTS.tally_triggers),
        migrations.AddField(
            model_name="trial",
            name="requests",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(MEASUREMENTS.tally_triggers, migrations.RunPython.noop),
    ]
