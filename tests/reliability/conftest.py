import sqlite3
from urllib.parse import quote

import pytest
from django.db import connection


class WorkerDatabase:
    """The test database as a subprocess (qcluster, gunicorn) sees it.

    PostgreSQL: the test database itself. SQLite: the test database lives in this process's
    memory, so it is copied to a file for the subprocess (`push`) and back (`pull`).
    """

    def __init__(self, tmp_path):
        self.path = tmp_path / "worker.sqlite3"

    @property
    def url(self) -> str:
        s = connection.settings_dict
        if connection.vendor == "postgresql":
            password = f":{quote(s['PASSWORD'], safe='')}" if s.get("PASSWORD") else ""
            user = quote(s.get("USER") or "", safe="")
            return f"postgres://{user}{password}@{s['HOST']}:{s['PORT'] or 5432}/{s['NAME']}"
        return f"sqlite:///{self.path}"

    def push(self) -> None:
        if connection.vendor == "sqlite":
            connection.ensure_connection()
            with sqlite3.connect(self.path) as target:
                connection.connection.backup(target)

    def pull(self) -> None:
        if connection.vendor == "sqlite":
            with sqlite3.connect(self.path) as source:
                source.backup(connection.connection)


@pytest.fixture
def worker_db(tmp_path, transactional_db):
    return WorkerDatabase(tmp_path)


@pytest.fixture(autouse=True)
def own_raw_exports(settings, tmp_path):
    """Published raw downloads in files of this test's own (boxbench/views/raw_files.py)."""
    settings.RAW_EXPORT_DIR = tmp_path / "raw-exports"
