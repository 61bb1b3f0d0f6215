"""Suite-wide test settings and the fixtures several folders share.

`./boxbench.sh test` runs the whole suite on SQLite, then again on PostgreSQL. Tests that never
touch the database gain nothing from the second pass, so with BOXBENCH_DATABASE_TESTS_ONLY=1 only
tests that use the database are collected.
"""

import os
import secrets

# Servers the tests start (gunicorn) refuse the development SECRET_KEY with DEBUG off, as a
# deployment must: they inherit a random key of their own.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(48))

import pytest

from runner.declarations import get_declaration
from runner.providers.local import LocalProvider

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


@pytest.fixture
def local(tmp_path):
    """The real local provider, with its sandboxes under this test's own directory."""
    provider = LocalProvider(get_declaration("local"), {"root": tmp_path / "sandboxes"})
    yield provider
    for sandbox in provider.list_sandboxes():
        provider.destroy(sandbox)
