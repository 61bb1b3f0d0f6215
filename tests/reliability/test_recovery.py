"""Orphaned trials: a lost worker's trial is ended as cut short and its sandboxes destroyed."""

import io
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.core.management.base import CommandError

from boxbench.models import Outcome, Run, RunStatus, Trial, TrialState
from runner import recovery, runs, steps, store
from runner.providers.base import SandboxSpec
from runner.results import TrialResult
from tests.support.reliability import (
    assert_recovered,
    claim,
    plan,
    queue_secret_key,
    tool_running,
    wait_for,
)

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


def start_qcluster(worker_db, local, tmp_path, name: str, key: str) -> subprocess.Popen:
    """A real `manage.py qcluster` on the test database: heartbeats every second, orphans after
    4 s (the defaults, 5 s and 75 s, only stretch the waits)."""
    env = {
        **os.environ,
        "SECRET_KEY": key,
        "DATABASE_URL": worker_db.url,
        "BOXBENCH_VAR_DIR": str(tmp_path / "var"),
        "BOXBENCH_LOCAL_SANDBOX_ROOT": str(local.root),
        "BOXBENCH_Q_SYNC": "0",
        "BOXBENCH_Q_WORKERS": "1",
        "BOXBENCH_HEARTBEAT_SECONDS": "1",
        "BOXBENCH_ORPHAN_AFTER_SECONDS": "4",
    }
    with open(tmp_path / f"{name}.log", "wb") as log:
        return subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop_qcluster(cluster: subprocess.Popen) -> None:
    os.killpg(cluster.pid, signal.SIGKILL)
    cluster.wait()


def test_a_restarted_qcluster_recovers_the_killed_ones_trial_and_finishes_the_run(
    worker_db, local, chain_provider, tmp_path, settings, monkeypatch
):
    """The issue's "done when": kill -9 the qcluster mid-trial; the restarted one ends the orphan
    (cut short), destroys its sandbox, resumes the chain from its step and completes the run with
    every other trial; nothing runs twice and nothing is left behind."""
    settings.RUNNER_ORPHAN_AFTER_S = 4
    key = queue_secret_key(monkeypatch)
    run = plan("cpu-single", trials=2)  # sysbench runs 7 s: the kill lands mid-trial
    steps.start_run(run)
    worker_db.push()
    cluster = start_qcluster(worker_db, local, tmp_path, "killed", key)
    try:
        # Mid-procedure, not mid-create: test_local_provider.py covers a create cut short.
        wait_for(lambda: tool_running(local, "sysbench"), 90, "sysbench in a sandbox")
    finally:
        stop_qcluster(cluster)
    killed_at = time.monotonic()
    worker_db.pull()
    (orphan,) = run.trials.filter(state=TrialState.RUNNING)
    assert local.list_sandboxes(), "the killed worker's sandbox outlives it"

    restarted = start_qcluster(worker_db, local, tmp_path, "restarted", key)
    try:

        def finished():
            worker_db.pull()
            return Run.objects.get(pk=run.pk).status in (RunStatus.COMPLETED, RunStatus.FAILED)

        wait_for(finished, 240, "the run to finish on the restarted qcluster")
    finally:
        stop_qcluster(restarted)
    print(f"killed -> run finished in {time.monotonic() - killed_at:.1f} s")
    worker_db.pull()
    run.refresh_from_db()
    _, lifecycle = assert_recovered(orphan.pk)
    assert lifecycle["cleanup_verified"] is True
    assert run.status == RunStatus.COMPLETED
    other = run.trials.exclude(pk=orphan.pk).get()  # planned: 2; no refill of a cut-short one
    assert other.outcome == Outcome.SUCCESS
    assert run.chain_progress.get().resumed == 1
    assert local.list_sandboxes() == []
    # django-q2 may hand the lost step's task out again: it must find nothing to do.
    steps.execute_chain(run.pk, "local")
    assert run.trials.count() == 2 and local.list_sandboxes() == []


def test_an_orphan_is_a_running_trial_whose_heartbeat_is_stale(chain_provider, local, settings):
    settings.RUNNER_ORPHAN_AFTER_S = 60
    run = plan("create", trials=4)
    run.transition(RunStatus.RUNNING)
    long_alive, silent, just_fresh, *_ = run.trials.order_by("seq")
    claim(long_alive, minutes_ago=120, beat_s_ago=5)  # runs for long, its worker is alive
    claim(silent, minutes_ago=2, beat_s_ago=61)
    claim(just_fresh, minutes_ago=2, beat_s_ago=55)
    (orphan,) = recovery.find_orphans()
    assert orphan.trial_id == str(silent.pk) and orphan.limit == timedelta(seconds=60)
    assert orphan.job_host == django_settings.JOB_HOST


def test_a_trial_without_a_heartbeat_waits_for_its_benchmarks_own_limit(chain_provider, local):
    run = plan("create", trials=2)
    run.transition(RunStatus.RUNNING)
    recent, old = run.trials.order_by("seq")
    limit = recovery.trial_limit("create")
    assert limit == timedelta(seconds=600 + 60 + 300) + recovery.MARGIN
    claim(recent, minutes_ago=limit.total_seconds() / 60 - 1)
    claim(old, minutes_ago=limit.total_seconds() / 60 + 1)
    Trial.objects.update(heartbeat_at=None)  # claimed by a runner older than the heartbeat
    assert [o.trial_id for o in recovery.find_orphans()] == [str(old.pk)]


def test_it_destroys_a_batch_only_once_no_live_trial_uses_it(chain_provider, local):
    run = plan("create", trials=8)
    run.transition(RunStatus.RUNNING)
    lost, busy = run.trials.filter(round=1).order_by("seq")
    lone = run.trials.filter(round=2).order_by("seq").first()
    claim(lost, minutes_ago=60)
    claim(busy, minutes_ago=1, beat_s_ago=2)
    claim(lone, minutes_ago=60)
    shared = local.create(SandboxSpec(1, 512, lost.batch, 60))
    alone = local.create(SandboxSpec(1, 512, lone.batch, 60))

    report = recovery.recover_orphans()

    assert {o.trial_id for o in report.recovered} == {str(lost.pk), str(lone.pk)}
    assert report.deferred == [f"local {lost.batch}"]
    assert [s.id for s in local.list_sandboxes()] == [shared.id]
    assert local.is_gone(alone.id)
    assert assert_recovered(lost.pk)[1]["cleanup_verified"] is False  # its sandbox may remain
    assert assert_recovered(lone.pk)[1]["cleanup_verified"] is True


def test_a_slow_worker_loses_the_race_cleanly(chain_provider, local):
    run = plan("create", trials=1)
    run.transition(RunStatus.RUNNING)
    trial = run.trials.get()
    claim(trial, minutes_ago=0)
    recovery.recover_orphans(max_age=0)
    with pytest.raises(store.TrialNotRunning):
        store.save_result(trial.pk, TrialResult())
    assert_recovered(trial.pk)


def test_it_finishes_a_cancelling_run_once_its_last_orphan_ends(chain_provider, local):
    run = plan("create", trials=2)
    run.transition(RunStatus.RUNNING)
    claim(run.trials.order_by("seq").first(), minutes_ago=60)
    runs.cancel_run(run)
    assert run.status == RunStatus.CANCELLING  # waits for the running trial forever, until...
    report = recovery.recover_orphans()
    run.refresh_from_db()
    assert report.runs_finished == [str(run.pk)] and run.status == RunStatus.CANCELLED


def test_the_cli_lists_then_recovers_and_refuses_a_negative_age(chain_provider, local):
    run = plan("create", trials=1)
    run.transition(RunStatus.RUNNING)
    trial = run.trials.get()
    claim(trial, minutes_ago=3, beat_s_ago=1)
    out = io.StringIO()
    call_command("bench", "recover", "--dry-run", "--max-age", "2", stdout=out)
    assert f"would recover trial {trial.pk}" in out.getvalue()
    assert Trial.objects.get(pk=trial.pk).state == TrialState.RUNNING
    call_command("bench", "recover", stdout=out)
    assert "0 orphaned trial(s) recovered" in out.getvalue()
    call_command("bench", "recover", "--max-age", "2", stdout=out)
    assert "1 orphaned trial(s) recovered" in out.getvalue()
    assert_recovered(trial.pk)
    with pytest.raises(CommandError, match="--max-age must be 0 or more"):
        call_command("bench", "recover", "--max-age", "-1", stdout=out)


def test_it_reports_a_provider_it_cannot_list_and_still_ends_the_trial(chain_provider, local):
    class Down:
        def list_sandboxes(self, label=None):
            raise ConnectionError("connection refused by 127.0.0.1:9")

    run = plan("create", trials=1)
    run.transition(RunStatus.RUNNING)
    trial = run.trials.get()
    claim(trial, minutes_ago=60)
    report = recovery.recover_orphans(provider_factory=lambda slug: Down())
    assert report.errors == ["local: cannot list sandboxes: connection refused by 127.0.0.1:9"]
    assert assert_recovered(trial.pk)[1]["cleanup_verified"] is False


def test_a_redelivered_chain_runs_what_is_queued_but_never_refills_the_unknown_outcome(
    chain_provider, local
):
    run = plan("create", trials=2)
    run.transition(RunStatus.RUNNING)
    lost, queued = run.trials.order_by("seq")
    claim(lost, minutes_ago=60)
    recovery.recover_orphans()
    steps.execute_chain(run.pk, "local")  # django-q2 hands a lost task out again
    run.refresh_from_db()
    assert Trial.objects.get(pk=queued.pk).outcome == Outcome.SUCCESS
    assert not run.trials.filter(replaces=lost).exists()
    assert "outcome is unknown" in run.manifest["topups"]["local"]["stopped"]
    assert run.status == RunStatus.COMPLETED


def test_it_leaves_the_sandboxes_of_another_job_host_to_that_host(chain_provider, local):
    run = plan("create", trials=1)
    run.transition(RunStatus.RUNNING)
    trial = run.trials.get()
    claim(trial, minutes_ago=60)
    Trial.objects.filter(pk=trial.pk).update(job_host="other-host")
    sandbox = local.create(SandboxSpec(1, 512, trial.batch, 60))  # "on" the other host

    report = recovery.recover_orphans()

    assert [o.trial_id for o in report.recovered] == [str(trial.pk)]  # ended from here
    assert report.deferred == [f"local {trial.batch} (on other-host)"]
    assert assert_recovered(trial.pk)[1]["cleanup_verified"] is False
    assert [s.id for s in local.list_sandboxes()] == [sandbox.id]
    local.destroy(sandbox)
