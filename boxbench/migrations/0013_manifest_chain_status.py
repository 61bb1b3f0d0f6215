"""A chain's live state has one home, its ChainProgress row: the `status` each manifest kept in
`chains.<provider>` (planned, running, done) goes from the runs planned here. Imported runs keep
their manifest as given, so an export still gives the file's bytes back.

Backwards, the status is rebuilt from the rows: done, running (queued, running or waiting for its
turn), or planned (no row: the chain never started).
"""

from django.db import migrations

IMPORTED = "imported from "  # the note of an imported run's one transition (rawdata/importer.py)
BATCH = 500


def planned_here(apps):
    Run = apps.get_model("boxbench", "Run")
    imported = Run.objects.filter(transitions__note__startswith=IMPORTED)
    return Run.objects.exclude(pk__in=imported.values("pk"))


def drop_status(apps, schema_editor):
    runs = planned_here(apps)
    for run in runs.only("pk", "manifest").iterator(chunk_size=BATCH):
        chains = (run.manifest or {}).get("chains")
        if isinstance(chains, dict) and any(
            isinstance(c, dict) and "status" in c for c in chains.values()
        ):
            for chain in chains.values():
                if isinstance(chain, dict):
                    chain.pop("status", None)
            run.save(update_fields=["manifest"])


def restore_status(apps, schema_editor):
    ChainProgress = apps.get_model("boxbench", "ChainProgress")
    for run in planned_here(apps).only("pk", "manifest").iterator(chunk_size=BATCH):
        chains = (run.manifest or {}).get("chains")
        if not isinstance(chains, dict) or not chains:
            continue
        states = dict(
            ChainProgress.objects.filter(run_id=run.pk).values_list("provider", "state")
        )
        for provider, chain in chains.items():
            if isinstance(chain, dict):
                state = states.get(provider)
                chain["status"] = (
                    "planned" if state is None else "done" if state == "done" else "running"
                )
        run.save(update_fields=["manifest"])


class Migration(migrations.Migration):
    dependencies = [
        ("boxbench", "0012_trial_measurements"),
    ]

    operations = [migrations.RunPython(drop_status, restore_status)]
