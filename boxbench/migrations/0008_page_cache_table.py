"""The database table of the page cache (settings.CACHES when no Redis is configured).

What `manage.py createcachetable` does, as a migration so that `migrate` alone prepares a
deployment; it creates nothing when the cache is Redis, and nothing twice.
"""

from django.core.management import call_command
from django.db import migrations


def create_cache_table(apps, schema_editor):
    call_command("createcachetable", database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = [
        ("boxbench", "0007_chain_progress"),
    ]

    operations = [
        migrations.RunPython(create_cache_table, migrations.RunPython.noop),
    ]
