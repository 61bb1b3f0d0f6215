"""Honest run states: completed only when every trial has finished, never a success without one,
and a failure the database could not take is recorded once it is back."""

from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from boxbench.models import Outcome, RunStatus, Trial, TrialState
from runner import recovery, runs, steps, store
from runner.plan import plan_run

pytestmark = pytest.mark.django_db(transaction=True)


def plan(trials=2):
    run = plan_run(
        "states", benchmarks=["create"], providers=["local"], trials=trials, seed=1, concurrency=1
    )
    run.transition(RunStatus.RUNNING)
    return run


def test_a_run_waits_for_its_last_running_trial_then_recovery_completes_it(chain_provider, local):
    run = plan(trials=2)
    lost, queued = run.trials.order_by("seq")
    assert store.claim_trial(lost.pk, "lost-host")
    steps.execute_chain(run.pk, "local")  # runs the queued trial; the lost one still "runs"
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING  # not completed while a trial is still running
    assert Trial.objects.get(pk=queued.pk).outcome == Outcome.SUCCESS

    Trial.objects.filter(pk=lost.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    report = recovery.recover_orphans()
    run.refresh_from_db()
    assert report.runs_finished == [str(run.pk)]
    assert run.status == RunStatus.COMPLETED
    assert not run.trials.filter(state__in=(TrialState.QUEUED, TrialState.RUNNING)).exists()


def test_a_failure_the_database_could_not_take_is_recorded_once_it_is_back(
    chain_provider, settings, tmp_path, monkeypatch
):
    settings.VAR_DIR = tmp_path
    run = plan(trials=1)

    def away(run_id):
        raise OperationalError("connection refused")

    monkeypatch.setattr(store, "get_run", away)
    assert runs.fail_run(run.pk, "chain local failed: OperationalError: gone") is False
    monkeypatch.undo()
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING
    assert [p.name for p in (tmp_path / "pending-failures").iterdir()] == [f"{run.pk}.json"]

    assert recovery.scheduled_recovery().endswith("1 run failure(s) recorded late")
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    note = run.transitions.get(to_status=RunStatus.FAILED).note
    assert note == (
        "chain local failed: OperationalError: gone (recorded once the database was back)"
    )
    assert run.trials.get().state == TrialState.CANCELLED
    assert list((tmp_path / "pending-failures").iterdir()) == []


def test_the_next_run_destroys_boxbench_leftovers_and_refuses_only_foreign_sandboxes(
    chain_provider, local
):
    from runner.providers.base import SandboxSpec

    earlier = plan(trials=2)
    lost, busy = earlier.trials.order_by("seq")
    # A sandbox of a batch whose trial was lost (recovered, not running), and one that a running
    # trial of the earlier run still uses.
    leftover = local.create(SandboxSpec(1, 512, lost.batch, 600))
    assert store.claim_trial(busy.pk, "elsewhere")
    in_use = local.create(SandboxSpec(1, 512, busy.batch, 600))

    refused = plan(trials=1)
    steps.execute_chain(refused.pk, "local")
    refused.refresh_from_db()
    assert refused.manifest["leftovers"]["local"] == {
        "removed": [leftover.id],
        "batches": [lost.batch],
        "errors": [],
    }
    assert local.is_gone(leftover.id)
    # The other run's sandbox in use is not ours to remove: refused, as for a foreign one.
    assert refused.status == RunStatus.FAILED
    assert (
        f"1 other live sandbox(es) ({in_use.id})" in refused.manifest["chains"]["local"]["stopped"]
    )

    Trial.objects.filter(pk=busy.pk).update(state=TrialState.CANCELLED)  # that trial has ended
    later = plan(trials=1)
    steps.execute_chain(later.pk, "local")
    later.refresh_from_db()
    assert later.status == RunStatus.COMPLETED
    assert later.manifest["leftovers"]["local"]["removed"] == [in_use.id]
    assert local.list_sandboxes() == []
