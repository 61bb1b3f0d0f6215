"""Chains as steps, one queue task each: providers sharing the job host take turns and never run
at once; a duplicate task runs nothing; a lost step is resumed where it stopped; a chain's state
is kept once (ChainProgress), and the queue's task names resolve."""

import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from django.utils.module_loading import import_string

from boxbench.models import ChainProgress, ChainState, Outcome, RunStatus, TrialState
from runner import chain, recovery, rules, runs, steps, store
from runner.plan import plan_run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def step_log(monkeypatch):
    """(provider, step, start, end) of every step that ran, and how many ran at once."""
    log, lock, running = [], threading.Lock(), {"now": 0, "most": 0}
    real = chain.Chain.step

    def step(self, number):
        with lock:
            running["now"] += 1
            running["most"] = max(running["most"], running["now"])
        started = time.monotonic()
        try:
            return real(self, number)
        finally:
            with lock:
                running["now"] -= 1
            log.append((self.slug, number, started, time.monotonic()))

    monkeypatch.setattr(chain.Chain, "step", step)
    return log, running


def test_it_caps_parallel_trials_to_the_cores_of_a_shared_job_host(chain_provider, settings):
    assert rules.fit_host_cores(4, cpus=2, sandboxes_per_trial=1, host_cpus=2) == 1
    assert rules.fit_host_cores(4, cpus=1, sandboxes_per_trial=1, host_cpus=2) == 2
    assert rules.fit_host_cores(1, cpus=4, sandboxes_per_trial=1, host_cpus=2) == 1
    settings.RUNNER_JOB_HOST_CPUS = 2
    run = plan_run(
        "cap", benchmarks=["create"], providers=["local"], trials=2, seed=1, concurrency=2
    )
    schedule = run.manifest["schedule"]
    assert schedule["lanes"] == {f"host:{settings.JOB_HOST}": ["local"]}
    assert schedule["host_cpus"] == 2 and schedule["capped"] == {"create": [2, 1]}
    assert "fit its 2 core(s)" in schedule["reason"]
    assert run.manifest["benchmarks"]["create"]["parallel_trials"] == 1


def test_providers_sharing_the_job_host_take_turns_and_never_run_at_once(
    chain_provider, sync_queue, step_log
):
    log, running = step_log
    # Both run on this host's `local` here: what matters is that both share the job host.
    run = plan_run(
        "lanes",
        benchmarks=["create"],
        providers=["docker", "local"],
        trials=4,
        seed=3,
        concurrency=1,
    )
    host = run.manifest["providers"]["local"]["job_host"]
    assert run.manifest["schedule"]["lanes"] == {f"host:{host}": ["docker", "local"]}
    steps.start_run(run)
    run.refresh_from_db()

    assert run.status == RunStatus.COMPLETED
    assert running["most"] == 1  # never two steps at once
    providers = [provider for provider, _, _, _ in log]
    # Turns alternate while both have steps left: the start of each, then round 1 of each...
    assert providers[:10] == ["docker", "local"] * 5
    assert [n for p, n, _, _ in log if p == "local"][:5] == [0, 1, 2, 3, 4]
    assert set(ChainProgress.objects.filter(run=run).values_list("state", flat=True)) == {"done"}
    assert run.trials.filter(outcome=Outcome.SUCCESS).count() == 8


def test_a_duplicate_or_late_step_task_runs_nothing(chain_provider, step_log):
    log, _ = step_log
    run = plan_run(
        "dup", benchmarks=["create"], providers=["local"], trials=1, seed=1, concurrency=1
    )
    run.transition(RunStatus.RUNNING)
    store.create_progress(run, [("local", "here", "", ChainState.QUEUED)])
    queued = store.progress(run.pk, "local")
    assert steps.run_step(queued) == 1
    assert steps.run_step(queued) is None  # delivered twice: not queued any more
    steps.chain_step(str(run.pk), "local", 0)  # the task itself: nothing to do either
    assert [(p, n) for p, n, _, _ in log] == [("local", 0)]


def test_a_lost_step_is_resumed_where_it_stopped_and_runs_no_trial_twice(
    chain_provider, sync_queue, settings
):
    settings.RUNNER_ORPHAN_AFTER_S = 60
    run = plan_run(
        "resume", benchmarks=["create"], providers=["local"], trials=4, seed=1, concurrency=1
    )
    run.transition(RunStatus.RUNNING)
    store.create_progress(run, [("local", "lost-host", "", ChainState.QUEUED)])
    steps.run_step(store.progress(run.pk, "local"))
    store.set_queued(run.pk, "local")
    # A worker took step 1, ran its trial, and died: the step is "running" with a stale heartbeat.
    assert store.claim_step(run.pk, "local", 1)
    order = run.typed_manifest.chain_order("local")
    first = run.trials.get(batch__endswith=f"-{order[0][0]}-r{order[0][1]}")
    assert store.claim_trial(first.pk, "lost-host")
    long_ago = timezone.now() - timedelta(minutes=5)
    ChainProgress.objects.filter(run=run).update(heartbeat_at=long_ago)
    run.trials.filter(pk=first.pk).update(heartbeat_at=long_ago)

    report = recovery.recover_orphans()  # the sync queue runs the resumed steps inline

    assert [o.trial_id for o in report.recovered] == [str(first.pk)]
    assert report.resumed == [f"{run.pk} local step 1"]
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    first.refresh_from_db()
    assert first.cut_short and first.job_host == "lost-host"  # ended, never run again
    others = run.trials.exclude(pk=first.pk)
    assert [t.outcome for t in others] == [Outcome.SUCCESS] * 3
    assert not run.trials.filter(replaces__isnull=False).exists()  # an unknown outcome
    progress = ChainProgress.objects.get(run=run)
    assert (progress.state, progress.resumed) == ("done", 1)


def test_recovery_leaves_a_live_step_and_a_fresh_queue_alone(chain_provider, settings):
    settings.RUNNER_ORPHAN_AFTER_S = 60
    run = plan_run(
        "alive", benchmarks=["create"], providers=["local"], trials=1, seed=1, concurrency=1
    )
    run.transition(RunStatus.RUNNING)
    store.create_progress(run, [("local", "here", "", ChainState.QUEUED)])
    ChainProgress.objects.filter(run=run).update(enqueued_at=timezone.now())
    assert recovery.resume_chains() == []
    assert store.claim_step(run.pk, "local", 0)
    assert recovery.resume_chains() == []  # its heartbeat is fresh
    assert run.trials.get().state == TrialState.QUEUED


def test_a_run_ends_when_every_planned_chain_is_done_as_its_progress_rows_say(chain_provider):
    run = plan_run(
        "two",
        benchmarks=["create"],
        providers=["docker", "local"],
        trials=1,
        seed=1,
        concurrency=1,
    )
    run.transition(RunStatus.RUNNING)
    steps.execute_chain(run.pk, "docker")
    run.refresh_from_db()
    # The local chain has not started (no ChainProgress row yet): the run waits for it.
    assert run.status == RunStatus.RUNNING
    assert not store.chains_done(run)
    steps.execute_chain(run.pk, "local")
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    # The manifest keeps the plan and why a chain stopped, never where it stands.
    assert all(set(c) == {"order"} for c in run.manifest["chains"].values())
    states = ChainProgress.objects.filter(run=run).values_list("provider", "state")
    assert sorted(states) == [("docker", "done"), ("local", "done")]


def test_the_queue_task_names_resolve_to_their_functions():
    # The queue imports a task by its name when it runs it: a rename fails here, not in a worker.
    assert import_string(steps.TASK) is steps.chain_step
    assert callable(import_string(runs.AUDIT_TASK))
