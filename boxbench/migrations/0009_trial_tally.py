"""TrialTally, kept by triggers on boxbench_trial, and the partial index of running trials.

PostgreSQL: statement-level triggers with transition tables, so a bulk UPDATE or a COPY of a
million trials costs one grouped upsert, not a million. SQLite: row-level triggers (it has no
statement-level ones). The triggers are created before the tally is filled from the trials already
stored, in the same transaction, so no write falls between the two. A DELETE only decrements rows
that exist: when a run is deleted its tally rows may already be gone. The PostgreSQL triggers are
ENABLE ALWAYS: they fire even where a bulk writer sets session_replication_role = replica to skip
the per-row foreign-key triggers (the raw-data import).
"""

import django.db.models.deletion
from django.db import migrations, models

KEY = "run_id, provider_id, state, outcome"
UPSERT = (
    f"INSERT INTO boxbench_trialtally AS t ({KEY}, n) {{select}} "
    f"ON CONFLICT ({KEY}) DO UPDATE SET n = t.n + EXCLUDED.n"
)
FILL = f"INSERT INTO boxbench_trialtally ({KEY}, n) SELECT {KEY}, count(*) FROM boxbench_trial GROUP BY {KEY}"

# Rows are upserted in key order so two bulk statements lock tally rows in the same order.
POSTGRESQL = [
    f"""CREATE FUNCTION boxbench_trial_tally_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  {UPSERT.format(select=f"SELECT {KEY}, count(*) FROM tally_new GROUP BY {KEY} ORDER BY {KEY}")};
  RETURN NULL;
END $$""",
    f"""CREATE FUNCTION boxbench_trial_tally_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  {UPSERT.format(select=f'''SELECT {KEY}, sum(d) FROM (
    SELECT {KEY}, 1 AS d FROM tally_new UNION ALL SELECT {KEY}, -1 AS d FROM tally_old
  ) AS change GROUP BY {KEY} HAVING sum(d) <> 0 ORDER BY {KEY}''')};
  RETURN NULL;
END $$""",
    f"""CREATE FUNCTION boxbench_trial_tally_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE boxbench_trialtally AS t SET n = t.n - gone.n
  FROM (SELECT {KEY}, count(*) AS n FROM tally_old GROUP BY {KEY}) AS gone
  WHERE t.run_id = gone.run_id AND t.provider_id = gone.provider_id
    AND t.state = gone.state AND t.outcome = gone.outcome;
  RETURN NULL;
END $$""",
    """CREATE FUNCTION boxbench_trial_tally_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM boxbench_trialtally;
  RETURN NULL;
END $$""",
    "CREATE TRIGGER trial_tally_insert AFTER INSERT ON boxbench_trial "
    "REFERENCING NEW TABLE AS tally_new "
    "FOR EACH STATEMENT EXECUTE FUNCTION boxbench_trial_tally_insert()",
    "CREATE TRIGGER trial_tally_update AFTER UPDATE ON boxbench_trial "
    "REFERENCING OLD TABLE AS tally_old NEW TABLE AS tally_new "
    "FOR EACH STATEMENT EXECUTE FUNCTION boxbench_trial_tally_update()",
    "CREATE TRIGGER trial_tally_delete AFTER DELETE ON boxbench_trial "
    "REFERENCING OLD TABLE AS tally_old "
    "FOR EACH STATEMENT EXECUTE FUNCTION boxbench_trial_tally_delete()",
    "CREATE TRIGGER trial_tally_truncate AFTER TRUNCATE ON boxbench_trial "
    "FOR EACH STATEMENT EXECUTE FUNCTION boxbench_trial_tally_truncate()",
    *(
        f"ALTER TABLE boxbench_trial ENABLE ALWAYS TRIGGER trial_tally_{op}"
        for op in ("insert", "update", "delete", "truncate")
    ),
]
POSTGRESQL_DROP = [
    f"DROP TRIGGER IF EXISTS trial_tally_{op} ON boxbench_trial; "
    f"DROP FUNCTION IF EXISTS boxbench_trial_tally_{op}()"
    for op in ("insert", "update", "delete", "truncate")
]

_SQLITE_ADD = (
    f"INSERT INTO boxbench_trialtally ({KEY}, n) "
    "VALUES (NEW.run_id, NEW.provider_id, NEW.state, NEW.outcome, 1) "
    f"ON CONFLICT ({KEY}) DO UPDATE SET n = n + 1"
)
_SQLITE_SUBTRACT = (
    "UPDATE boxbench_trialtally SET n = n - 1 WHERE run_id = OLD.run_id "
    "AND provider_id = OLD.provider_id AND state = OLD.state AND outcome = OLD.outcome"
)
SQLITE = [
    f"CREATE TRIGGER trial_tally_insert AFTER INSERT ON boxbench_trial BEGIN {_SQLITE_ADD}; END",
    "CREATE TRIGGER trial_tally_update AFTER UPDATE OF run_id, provider_id, state, outcome "
    "ON boxbench_trial WHEN OLD.run_id IS NOT NEW.run_id OR OLD.provider_id IS NOT "
    "NEW.provider_id OR OLD.state IS NOT NEW.state OR OLD.outcome IS NOT NEW.outcome "
    f"BEGIN {_SQLITE_SUBTRACT}; {_SQLITE_ADD}; END",
    f"CREATE TRIGGER trial_tally_delete AFTER DELETE ON boxbench_trial BEGIN {_SQLITE_SUBTRACT}; END",
]
SQLITE_DROP = [f"DROP TRIGGER IF EXISTS trial_tally_{op}" for op in ("insert", "update", "delete")]


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    statements = {"postgresql": POSTGRESQL, "sqlite": SQLITE}.get(vendor)
    if statements is None:
        raise RuntimeError(f"no trial tally triggers for the {vendor} database")
    for statement in [*statements, FILL]:
        schema_editor.execute(statement, params=None)


def uninstall(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for statement in POSTGRESQL_DROP if vendor == "postgresql" else SQLITE_DROP:
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("boxbench", "0008_page_cache_table"),
    ]

    operations = [
        migrations.CreateModel(
            name="TrialTally",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("state", models.CharField(max_length=20)),
                ("outcome", models.CharField(blank=True, max_length=20)),
                ("n", models.BigIntegerField(default=0)),
                ("provider", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+", to="boxbench.provider")),
                ("run", models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="boxbench.run")),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("run", "provider", "state", "outcome"), name="tally_uniq")
                ],
            },
        ),
        migrations.AddIndex(
            model_name="trial",
            index=models.Index(
                condition=models.Q(("state", "running")),
                fields=["provider", "started_at"],
                name="trial_running_idx",
            ),
        ),
        migrations.RunPython(install, uninstall),
    ]
