"""A real PostgreSQL outage in the middle of a trial: every connection of the test database is
terminated and new ones refused for OUTAGE_S seconds. The trial's result is kept, the chain goes
on, and the run completes (issue: a 20-second outage lost the measured trial and the run)."""

import threading
import time

import psycopg
import pytest
from django.db import connection

from boxbench.models import Outcome, RunStatus
from runner import steps
from runner.plan import plan_run
from tests.runner.faults import FaultyProvider

pytestmark = pytest.mark.django_db(transaction=True)
OUTAGE_S = 20.0


class PostgresOutage:
    """Refuses and ends every connection to the test database for a while, from the outside."""

    def __init__(self):
        s = connection.settings_dict
        self.database = s["NAME"]
        self.dsn = f"host={s['HOST']} port={s['PORT'] or 5432} user={s['USER']} dbname=postgres"
        self.thread: threading.Thread | None = None
        self.ended_connections = 0
        self.begun = threading.Event()  # connections refused and the open ones ended once
        self.over = threading.Event()  # connections allowed again

    def _admin(self, sql: str, params=()) -> list:
        with psycopg.connect(self.dsn, autocommit=True) as admin:
            cursor = admin.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def _run(self, seconds: float) -> None:
        self._admin(f'ALTER DATABASE "{self.database}" WITH ALLOW_CONNECTIONS false')
        try:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                ended = self._admin(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = %s AND pid <> pg_backend_pid()",
                    (self.database,),
                )
                self.ended_connections += len(ended)
                self.begun.set()
                time.sleep(0.2)
        finally:
            self._admin(f'ALTER DATABASE "{self.database}" WITH ALLOW_CONNECTIONS true')
            self.over.set()

    def start(self, seconds: float) -> None:
        self.thread = threading.Thread(target=self._run, args=(seconds,), daemon=True)
        self.thread.start()


@pytest.fixture
def outage():
    if connection.vendor != "postgresql":
        pytest.skip("a real database outage needs PostgreSQL (tests/runner covers SQLite)")
    found = PostgresOutage()
    yield found
    if found.thread is not None:
        found.thread.join()


def test_a_trial_measured_during_a_20_s_outage_is_kept_and_the_run_completes(
    outage, chain_provider, local
):
    calls = {"destroy": 0}

    class OutageOnFirstDestroy(FaultyProvider):
        def destroy(self, sandbox):
            calls["destroy"] += 1
            if calls["destroy"] == 1:
                outage.start(OUTAGE_S)
                # The outage has begun when the result is written.
                assert outage.begun.wait(60), "the outage did not begin"
            return super().destroy(sandbox)

    chain_provider(OutageOnFirstDestroy(local))
    run = plan_run(
        "outage", benchmarks=["create"], providers=["local"], trials=3, seed=1, concurrency=1
    )
    run.transition(RunStatus.RUNNING)
    steps.execute_chain(run.pk, "local")
    # Its last writes could only land once connections were allowed again.
    waited = outage.over.is_set()
    outage.thread.join()
    connection.close()  # ended by the outage after the chain's last query
    run.refresh_from_db()

    print(f"{outage.ended_connections} connection(s) ended")
    assert outage.ended_connections >= 1, "the outage ended no connection"
    assert waited, "the chain did not wait for the database"
    assert run.status == RunStatus.COMPLETED
    outcomes = list(run.trials.order_by("seq").values_list("outcome", flat=True))
    assert outcomes == [Outcome.SUCCESS] * 3
    assert local.list_sandboxes() == []
