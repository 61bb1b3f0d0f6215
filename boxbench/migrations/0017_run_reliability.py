"""A published run's attempts and failures per provider and operation, counted once at
publication (boxbench/leaderboard/reliability.py)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("boxbench", "0016_run_label_prefix"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunReliability",
            fields=[
                (
                    "run",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="boxbench.run",
                    ),
                ),
                ("counts", models.JSONField()),
            ],
        ),
    ]
