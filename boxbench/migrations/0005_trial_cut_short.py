"""Trial.cut_short: stored once, instead of read from the words of the cause.

Trials written before the column had it only in their cause, which the lifecycle and recovery
always started with "cut short: " (on provider failures whose owner is unknown).
"""

from django.db import migrations, models

CUT_SHORT_PREFIX = "cut short: "


def flag_cut_short_trials(apps, schema_editor):
    Trial = apps.get_model("boxbench", "Trial")
    Trial.objects.filter(
        outcome="provider_failure", owner="unknown", cause__startswith=CUT_SHORT_PREFIX
    ).update(cut_short=True)


class Migration(migrations.Migration):
    dependencies = [
        ("boxbench", "0004_run_imported_audit_report"),
    ]

    operations = [
        migrations.AddField(
            model_name="trial",
            name="cut_short",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(flag_cut_short_trials, migrations.RunPython.noop, elidable=True),
    ]
