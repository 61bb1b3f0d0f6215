"""C11, two reconcilers at once: two recovery sweeps over the same orphans at the same time (the
schedule of two qclusters, or the schedule and `bench recover`). Barriers hold both sweeps until
each has read the same orphans and the same lost chain step, so they always overlap; then every
orphan is ended exactly once, its sandboxes are destroyed (a second destroy of the same sandbox
is harmless), a lost step is queued once, and the run ends once."""

import io
import threading
from collections import Counter

import pytest
from django.core.management import call_command
from django.db import connections

from boxbench.models import (
    ChainProgress,
    ChainState,
    Evidence,
    RunStatus,
    RunTransition,
    Trial,
    TrialState,
)
from runner import recovery, runs, steps, store
from runner.providers.base import SandboxSpec
from tests.support.reliability import assert_recovered, claim, plan

pytestmark = pytest.mark.django_db(transaction=True)
# Only a sweep that never arrives makes a barrier wait this long; the test then fails.
BARRIER_S = 60


class CountingProvider:
    """The local provider, counting destroys per sandbox; every sweep's listing of sandboxes
    waits at `listed` so that both sweeps hold the same live sandboxes before either destroys."""

    def __init__(self, local, listed: threading.Barrier | None = None):
        self.local = local
        self.listed = listed
        self.destroys = Counter()
        self._lock = threading.Lock()

    def list_sandboxes(self, label=None):
        found = self.local.list_sandboxes(label)
        if self.listed is not None:
            self.listed.wait()
        return found

    def destroy(self, sandbox):
        with self._lock:
            self.destroys[sandbox.id] += 1
        self.local.destroy(sandbox)

    def is_gone(self, sandbox_id):
        return self.local.is_gone(sandbox_id)


def scheduled():
    """The minute schedule of a qcluster."""
    return recovery.scheduled_recovery()


def bench_recover():
    out = io.StringIO()
    call_command("bench", "recover", stdout=out)
    return out.getvalue()


def sweep_at_once(*sweeps):
    """Run the sweeps in threads, started together; what each returned, or the error it raised."""
    results = [None] * len(sweeps)

    def run(index, sweep):
        try:
            results[index] = sweep()
        except BaseException as exc:  # noqa: BLE001 - carried to the test's thread
            results[index] = exc
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=run, args=(i, s), name=f"sweep-{i}") for i, s in enumerate(sweeps)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=4 * BARRIER_S)
    assert not any(t.is_alive() for t in threads), "a sweep did not finish"
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def hold_until_both_read(monkeypatch):
    """Each sweep reads the orphans and the lost chain steps, then waits for the other one."""
    found, lost = threading.Barrier(2, timeout=BARRIER_S), threading.Barrier(2, timeout=BARRIER_S)
    find_orphans, lost_steps = recovery.find_orphans, store.lost_steps

    def find_then_wait(*args, **kwargs):
        orphans = find_orphans(*args, **kwargs)
        found.wait()
        return orphans

    def read_then_wait(*args, **kwargs):
        chains = lost_steps(*args, **kwargs)
        lost.wait()
        return chains

    monkeypatch.setattr(recovery, "find_orphans", find_then_wait)
    monkeypatch.setattr(store, "lost_steps", read_then_wait)


def a_lost_step():
    """A running run whose chain step lost its worker, and no trial of its own running."""
    run = plan("create", trials=1)
    run.transition(RunStatus.RUNNING)
    ChainProgress.objects.update_or_create(
        run=run,
        provider="local",
        defaults={"job_host": "", "state": ChainState.RUNNING, "step": 2},
    )
    # Well before any orphan limit, on the database's clock like a real heartbeat.
    stale = store.db_now() - recovery.orphan_after() * 2
    ChainProgress.objects.filter(run=run).update(heartbeat_at=stale)
    return run


def assert_each_ended_once(trials):
    for trial in trials:
        _, lifecycle = assert_recovered(trial.pk)
        assert lifecycle["cleanup_verified"] is True, trial.pk
        kinds = Counter(Evidence.objects.filter(trial=trial).values_list("kind", flat=True))
        assert kinds == {"recovery": 1, "lifecycle": 1}, (trial.pk, kinds)


@pytest.mark.parametrize(
    "second", [scheduled, bench_recover], ids=["two-schedules", "schedule-and-bench-recover"]
)
def test_two_sweeps_at_once_end_each_orphan_once_and_both_destroy_safely(
    chain_provider, local, monkeypatch, second
):
    run = plan("create", trials=8)
    run.transition(RunStatus.RUNNING)
    pair = list(run.trials.filter(round=1).order_by("seq"))
    assert len(pair) == 2 and pair[0].batch == pair[1].batch  # one batch, two orphans
    for trial in pair:
        claim(trial, minutes_ago=10)
    sandboxes = [local.create(SandboxSpec(1, 512, pair[0].batch, 120)) for _ in range(2)]
    runs.cancel_run(run)  # cancelling: it ends once its running trials have
    assert run.status == RunStatus.CANCELLING
    enqueued = []
    monkeypatch.setattr(steps, "enqueue", lambda *args: enqueued.append(args))
    other = a_lost_step()
    hold_until_both_read(monkeypatch)
    # Each sweep wins one orphan (they go through them in opposite orders) before either tries
    # the other's, so both destroy the shared batch; both list it before either destroys.
    provider = CountingProvider(local, listed=threading.Barrier(2, timeout=BARRIER_S))
    chain_provider(provider)
    won = threading.Barrier(2, timeout=BARRIER_S)
    end_trial, find_orphans = recovery.end_trial, recovery.find_orphans
    first = threading.local()

    def reversed_for_the_second(*args, **kwargs):
        orphans = find_orphans(*args, **kwargs)
        return orphans[::-1] if threading.current_thread().name == "sweep-1" else orphans

    def end_then_wait(*args):
        ended = end_trial(*args)
        if not getattr(first, "done", False):
            first.done = True
            won.wait()
        return ended

    monkeypatch.setattr(recovery, "find_orphans", reversed_for_the_second)
    monkeypatch.setattr(recovery, "end_trial", end_then_wait)
    # The worst case: both sweeps read the same database time (SQLite's clock steps by the
    # millisecond), so both write the same end time; neither may take the other's write as its own.
    same_time = store.db_now()
    monkeypatch.setattr(store, "db_now", lambda: same_time)

    summaries = sweep_at_once(scheduled, second)

    assert all("1 orphaned trial(s) recovered" in s for s in summaries), summaries
    assert all("0 error(s)" in s for s in summaries), summaries
    assert_each_ended_once(pair)
    assert local.list_sandboxes() == []
    assert dict(provider.destroys) == {s.id: 2 for s in sandboxes}  # repeated deletes only
    ends = RunTransition.objects.filter(run=run, from_status=RunStatus.CANCELLING)
    assert list(ends.values_list("to_status", flat=True)) == [RunStatus.CANCELLED]
    assert enqueued == [(other.pk, "local", 2, "")]  # the lost step, queued by one sweep
    assert other.chain_progress.get().resumed == 1
    assert run.trials.count() == 8  # nothing refilled, nothing added


def test_two_sweeps_racing_over_many_orphans_split_them_without_overlap(
    chain_provider, local, monkeypatch
):
    run = plan("create", trials=12)
    run.transition(RunStatus.RUNNING)
    trials = list(run.trials.order_by("seq"))
    for trial in trials:
        claim(trial, minutes_ago=10)
    batches = sorted({t.batch for t in trials})
    for batch in batches:
        local.create(SandboxSpec(1, 512, batch, 120))
    monkeypatch.setattr(steps, "enqueue", lambda *args: None)
    hold_until_both_read(monkeypatch)
    provider = CountingProvider(local)
    chain_provider(provider)

    reports = sweep_at_once(recovery.recover_orphans, recovery.recover_orphans)

    won = [{o.trial_id for o in report.recovered} for report in reports]
    assert not won[0] & won[1]
    assert won[0] | won[1] == {str(t.pk) for t in trials}
    assert [report.errors for report in reports] == [[], []]
    assert Trial.objects.filter(run=run).exclude(state=TrialState.DONE).count() == 0
    assert local.list_sandboxes() == []
    assert len(provider.destroys) == len(batches)  # every batch's sandbox, at least once
    assert_each_ended_once(trials)


def test_a_batch_one_sweep_deferred_is_confirmed_gone_by_the_sweep_that_destroys_it(
    chain_provider, local, monkeypatch
):
    """Sweep 0 still saw the second orphan of a batch fresh: it ends the first one and defers
    the batch, which the second one still uses. Sweep 1 then ends the second one and destroys
    the batch: both trials record their sandboxes confirmed gone."""
    run = plan("create", trials=8)
    run.transition(RunStatus.RUNNING)
    first, second = run.trials.filter(round=1).order_by("seq")
    for trial in (first, second):
        claim(trial, minutes_ago=10)
    local.create(SandboxSpec(1, 512, first.batch, 120))
    monkeypatch.setattr(steps, "enqueue", lambda *args: None)
    hold_until_both_read(monkeypatch)
    deferred = threading.Event()
    find_orphans, end_trial = recovery.find_orphans, recovery.end_trial
    in_use = store.batches_in_use

    def as_each_sweep_saw_them(*args, **kwargs):
        orphans = find_orphans(*args, **kwargs)
        if threading.current_thread().name == "sweep-0":
            return [o for o in orphans if o.trial_id == str(first.pk)]
        return orphans

    def after_sweep_0_deferred(*args):
        if threading.current_thread().name == "sweep-1":
            assert deferred.wait(BARRIER_S), "sweep 0 never checked its batches"
        return end_trial(*args)

    def checked(*args):
        used = in_use(*args)
        if threading.current_thread().name == "sweep-0":
            deferred.set()
        return used

    monkeypatch.setattr(recovery, "find_orphans", as_each_sweep_saw_them)
    monkeypatch.setattr(recovery, "end_trial", after_sweep_0_deferred)
    monkeypatch.setattr(store, "batches_in_use", checked)
    chain_provider(CountingProvider(local))

    reports = sweep_at_once(recovery.recover_orphans, recovery.recover_orphans)

    assert reports[0].deferred == [f"local {first.batch}"] and reports[0].destroyed == []
    assert [o.trial_id for o in reports[1].recovered] == [str(second.pk)]
    assert len(reports[1].destroyed) == 1 and local.list_sandboxes() == []
    assert_each_ended_once([first, second])
