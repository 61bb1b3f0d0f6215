"""Two job hosts: two real qclusters with different BOXBENCH_JOB_HOST names on one Redis and one
PostgreSQL. A provider's steps go to its host's queue only; every trial runs once, there, and
records that host; killing that host's cluster mid-run is recovered when it comes back."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from boxbench.models import Outcome, Run, RunStatus, Trial, TrialState
from runner import steps
from runner.plan import plan_run
from tests.support.reliability import queue_secret_key, tool_running, wait_for

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
REDIS = "redis://127.0.0.1:6379/13"  # a database number of its own


@pytest.fixture
def redis_queue(monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("two job hosts share one PostgreSQL (the SQLite test database is in memory)")
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=1).close()
    except OSError:
        pytest.skip("no Redis on 127.0.0.1:6379")
    import redis
    from django_q.conf import Conf

    redis.Redis.from_url(REDIS).flushdb()
    # This process enqueues through Redis too (django-q2 reads its settings once, at import).
    monkeypatch.setattr(Conf, "ORM", None)
    monkeypatch.setattr(Conf, "REDIS", REDIS)
    monkeypatch.setattr(Conf, "SYNC", False)
    yield
    redis.Redis.from_url(REDIS).flushdb()


def qcluster(host: str, local, tmp_path, key: str) -> subprocess.Popen:
    s = connection.settings_dict
    env = {
        **os.environ,
        "SECRET_KEY": key,
        "DATABASE_URL": f"postgres://{s['USER']}@{s['HOST']}:{s['PORT'] or 5432}/{s['NAME']}",
        "BOXBENCH_REDIS_URL": REDIS,
        "BOXBENCH_JOB_HOST": host,
        "BOXBENCH_VAR_DIR": str(tmp_path / host),
        "BOXBENCH_LOCAL_SANDBOX_ROOT": str(local.root),
        "BOXBENCH_Q_WORKERS": "1",
        "BOXBENCH_HEARTBEAT_SECONDS": "1",
        "BOXBENCH_ORPHAN_AFTER_SECONDS": "4",
    }
    with open(tmp_path / f"{host}.log", "ab") as log:
        return subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def kill(cluster: subprocess.Popen) -> None:
    os.killpg(cluster.pid, signal.SIGKILL)
    cluster.wait()


def finished(run_id) -> bool:
    connection.close()  # see the other processes' commits
    return Run.objects.get(pk=run_id).status in (RunStatus.COMPLETED, RunStatus.FAILED)


def test_every_trial_runs_once_on_its_providers_host_and_a_killed_host_recovers(
    redis_queue, chain_provider, local, tmp_path, settings, monkeypatch
):
    key = queue_secret_key(monkeypatch)
    run = plan_run(
        "two hosts",
        benchmarks=["cpu-single"],
        providers=["local"],
        trials=4,
        seed=2,
        concurrency=1,
        job_hosts={"local": "host-b"},
    )
    host_a, host_b = (
        qcluster("host-a", local, tmp_path, key),
        qcluster("host-b", local, tmp_path, key),
    )
    try:
        steps.start_run(run)
        # host-b's cluster is killed mid-trial (sysbench running), then started again.
        wait_for(lambda: tool_running(local, "sysbench"), 120, "sysbench on host-b")
        kill(host_b)
        killed_at = time.monotonic()
        host_b = qcluster("host-b", local, tmp_path, key)
        wait_for(lambda: finished(run.pk), 300, "the run to finish")
        recovered_in = time.monotonic() - killed_at
    finally:
        kill(host_a)
        kill(host_b)
    print(f"host-b killed -> run finished in {recovered_in:.1f} s")
    run.refresh_from_db()
    trials = list(run.trials.all())
    assert run.status == RunStatus.COMPLETED
    assert {t.job_host for t in trials if t.state == TrialState.DONE} == {"host-b"}
    cut = [t for t in trials if t.cut_short]
    assert len(cut) == 1  # the trial the kill interrupted, ended once and never run again
    unsuccessful = [
        (t.pk, t.outcome, t.owner, t.cause)
        for t in trials
        if not t.cut_short and t.outcome != Outcome.SUCCESS
    ]
    assert unsuccessful == [], f"see {tmp_path}/host-*.log"
    assert len(trials) == 4  # nothing ran twice, nothing was refilled after an unknown outcome
    assert Trial.objects.filter(run=run, state=TrialState.RUNNING).count() == 0
    # host-a served its own queue (its recovery schedule) and never a step of host-b's chain.
    assert "runner.steps.chain_step" not in (tmp_path / "host-a.log").read_text()
    assert "runner.steps.chain_step" in (tmp_path / "host-b.log").read_text()
    assert local.list_sandboxes() == []
