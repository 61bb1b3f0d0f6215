"""Suite-wide test settings.

`./boxbench.sh test` runs the whole suite on SQLite, then again on PostgreSQL. Tests that never
touch the database gain nothing from the second pass, so with BOXBENCH_DATABASE_TESTS_ONLY=1 only
tests that use the database are collected.
"""

import os
import secrets

# Servers the tests start (gunicorn) refuse the development SECRET_KEY with DEBUG off, as a
# deployment must: they inherit a random key of their own.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(48))

DATABASE_FIXTURES = {"db", "transactional_db", "live_server"}


def uses_database(item) -> bool:
    if item.get_closest_marker("django_db"):
        return True
    return bool(DATABASE_FIXTURES.intersection(getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(config, items):
    if os.environ.get("BOXBENCH_DATABASE_TESTS_ONLY") != "1":
        return
    kept = [item for item in items if uses_database(item)]
    deselected = [item for item in items if not uses_database(item)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
