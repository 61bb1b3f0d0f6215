"""Heartbeats of running trials, and a chain that rides out a database outage."""

import time
from datetime import timedelta

import pytest
from django.db import OperationalError, connection, transaction
from django.db.backends.utils import CursorWrapper
from django.utils import timezone

from boxbench.models import Outcome, RunStatus, Trial, TrialState
from runner import steps, store
from runner.heartbeat import Heartbeat
from runner.plan import plan_run
from runner.results import TrialResult
from tests.runner.faults import FaultyProvider

pytestmark = pytest.mark.django_db(transaction=True)


def plan(trials=2, benchmark="create"):
    run = plan_run(
        "hb", benchmarks=[benchmark], providers=["local"], trials=trials, seed=1, concurrency=1
    )
    run.transition(RunStatus.RUNNING)
    return run


def wait_for(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout_s:g} s")
        time.sleep(0.02)
    return found


def beat_of(trial):
    return Trial.objects.values_list("heartbeat_at", flat=True).get(pk=trial.pk)


def test_it_beats_for_the_running_trials_it_holds_and_no_others(chain_provider):
    run = plan(trials=2)
    held, finished = run.trials.order_by("seq")
    long_ago = timezone.now() - timedelta(hours=1)
    for trial in (held, finished):
        assert store.claim_trial(trial.pk, "here")
    Trial.objects.update(heartbeat_at=long_ago)
    Trial.objects.filter(pk=finished.pk).update(state=TrialState.CANCELLED)

    with Heartbeat("test", interval_s=0.05) as heartbeat:
        heartbeat.add(held.pk)
        heartbeat.add(finished.pk)
        wait_for(lambda: beat_of(held) > long_ago, 10, "heartbeat")
        heartbeat.remove(held.pk)
        time.sleep(0.2)  # any beat in flight lands
        last = beat_of(held)
        time.sleep(0.3)
    assert beat_of(held) == last  # removed: no longer beating
    assert beat_of(finished) == long_ago  # not running: never touched


def test_it_keeps_beating_once_the_database_returns(chain_provider, monkeypatch):
    run = plan(trials=1)
    trial = run.trials.get()
    assert store.claim_trial(trial.pk, "here")
    down = {"calls": 3}
    real_beat = store.beat

    def flaky(ids):
        if down["calls"]:
            down["calls"] -= 1
            raise OperationalError("server closed the connection unexpectedly")
        return real_beat(ids)

    monkeypatch.setattr(store, "beat", flaky)
    heartbeat = Heartbeat("test", interval_s=0.05)
    heartbeat.add(trial.pk)
    heartbeat.start()
    try:
        wait_for(lambda: heartbeat.beats, 20, "a heartbeat after the outage")
    finally:
        heartbeat.stop()
    assert heartbeat.failures == 3


def test_a_chain_writes_the_heartbeat_of_each_trial_it_runs(chain_provider, local, settings):
    settings.RUNNER_HEARTBEAT_S = 0.05
    chain_provider(FaultyProvider(local, destroy_delay_s=0.5))
    run = plan(trials=1)
    steps.execute_chain(run.pk, "local")
    trial = Trial.objects.get(run=run)
    assert trial.outcome == Outcome.SUCCESS
    # Claimed at started_at; beaten while destroy took its 0.5 s.
    assert trial.heartbeat_at - trial.started_at > timedelta(seconds=0.3)


class Outage:
    """Every query from any thread fails with OperationalError while the outage lasts, as a
    PostgreSQL that has gone away does (on PostgreSQL the tests in tests/reliability stop the
    real server's connections instead)."""

    def __init__(self, monkeypatch):
        self.until = 0.0
        self.failed = 0
        for name in ("execute", "executemany"):
            real = getattr(CursorWrapper, name)
            monkeypatch.setattr(CursorWrapper, name, self._wrap(real))

    def _wrap(self, real):
        def call(cursor, *args, **kwargs):
            if time.monotonic() < self.until:
                self.failed += 1
                raise OperationalError("connection to server at 127.0.0.1 failed: refused")
            return real(cursor, *args, **kwargs)

        return call

    def start(self, seconds: float) -> None:
        self.until = time.monotonic() + seconds


def test_a_result_written_during_a_database_outage_is_kept_and_the_chain_goes_on(
    chain_provider, local, monkeypatch
):
    outage = Outage(monkeypatch)
    calls = {"destroy": 0}

    class OutageOnFirstDestroy(FaultyProvider):
        def destroy(self, sandbox):
            calls["destroy"] += 1
            if calls["destroy"] == 1:
                outage.start(3.0)  # the trial's result is written inside the outage
            return super().destroy(sandbox)

    chain_provider(OutageOnFirstDestroy(local))
    run = plan(trials=3)
    steps.execute_chain(run.pk, "local")
    run.refresh_from_db()
    assert outage.failed > 0, "the outage never hit a query"
    assert run.status == RunStatus.COMPLETED
    outcomes = list(run.trials.order_by("seq").values_list("outcome", flat=True))
    assert outcomes == [Outcome.SUCCESS] * 3  # the first trial's result is kept, not lost
    assert not run.trials.filter(replaces__isnull=False).exists()


def test_a_result_is_not_stored_twice_when_the_commits_answer_was_lost(
    chain_provider, local, monkeypatch
):
    run = plan(trials=1)
    trial = run.trials.get()
    assert store.claim_trial(trial.pk, "here")
    result = TrialResult(started_at=timezone.now(), ended_at=timezone.now())
    real_write = store._write_result.__wrapped__
    state = {"first": True}

    def commit_then_lose_the_answer(trial_id, res):
        stored = real_write(trial_id, res)
        if state["first"]:
            state["first"] = False
            raise OperationalError("server closed the connection unexpectedly")
        return stored

    monkeypatch.setattr(store, "_write_result", store.retrying(commit_then_lose_the_answer))
    monkeypatch.setattr(store, "sleep", lambda s: None)
    saved = store.save_result(trial.pk, result)
    assert saved.state == TrialState.DONE and saved.outcome == Outcome.SUCCESS
    assert saved.evidence.filter(kind="lifecycle").count() == 1


def test_a_runner_defect_in_a_transaction_is_not_retried(chain_provider, monkeypatch):
    monkeypatch.setattr(store, "sleep", lambda s: pytest.fail("retried inside a transaction"))
    run = plan(trials=1)

    refused = connection.execute_wrapper(_refuse)
    with pytest.raises(OperationalError), transaction.atomic(), refused:
        store.run_status(run.pk)


def _refuse(execute, sql, params, many, context):
    raise OperationalError("refused")
