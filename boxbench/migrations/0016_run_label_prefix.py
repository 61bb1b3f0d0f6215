"""Each run's label digits, unique (runner/labels.py): no two runs share a sandbox label.

A run that already shares its digits with an earlier one (an import that chose its id to match)
keeps the column empty: the earlier run holds the digits.
"""

from django.db import migrations, models

LABEL_DIGITS = 12  # runner.labels.LABEL_DIGITS when this migration was written


def fill(apps, schema_editor):
    Run = apps.get_model("boxbench", "Run")
    taken = set()
    for run in Run.objects.order_by("created_at", "id").only("id"):
        digits = run.id.hex[:LABEL_DIGITS]
        if digits not in taken:
            taken.add(digits)
            Run.objects.filter(pk=run.pk).update(label_prefix=digits)


class Migration(migrations.Migration):
    dependencies = [
        ("boxbench", "0015_trial_requests"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="label_prefix",
            field=models.CharField(editable=False, max_length=12, null=True, unique=True),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
