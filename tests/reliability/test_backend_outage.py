"""C4: the provider's backend unreachable mid-run. Its refused creates are provider failures,
kept and refilled; the chain's workers wait for the backend (probing with backoff) instead of
spending refills within the outage, and a backend that never comes back fails the chain within
the wait's bound. The outage's clock is the lifecycle's skipped time, so no test waits it out."""

import time

import pytest
from django.db import connection

from boxbench.models import Outcome, RunStatus, Trial, TrialState
from runner import chain, runs, steps
from runner.plan import plan_run
from tests.runner.faults import BackendOutage

pytestmark = pytest.mark.django_db(transaction=True)


def run_with_outage(local, chain_provider, monkeypatch, skipped_time, down_s, concurrency=1):
    provider = chain_provider(BackendOutage(local, skipped_time.monotonic, down_s))
    monkeypatch.setattr(chain, "lifecycle_limits", skipped_time.limits())
    running_during_probes = []
    provider.on_refused_list = lambda: running_during_probes.append(
        (
            Trial.objects.filter(state=TrialState.RUNNING).count(),
            Trial.objects.filter(outcome=Outcome.PROVIDER_FAILURE).count(),
        )
    )
    run = plan_run(
        "outage",
        benchmarks=["create"],
        providers=["local"],
        trials=4,
        seed=1,
        concurrency=concurrency,
    )
    run.transition(RunStatus.RUNNING)
    steps.execute_chain(run.pk, "local")
    run.refresh_from_db()
    return run, provider, running_during_probes


def test_a_run_waits_out_a_60_s_outage_and_completes_with_every_trial(
    chain_provider, local, monkeypatch, skipped_time, settings
):
    settings.RUNNER_BACKEND_WAIT_S = 90
    # Two workers on PostgreSQL, so the other worker is held while one waits; the in-memory
    # SQLite test database locks whole tables, so one there.
    workers = 2 if connection.vendor == "postgresql" else 1
    run, provider, running = run_with_outage(
        local, chain_provider, monkeypatch, skipped_time, down_s=60, concurrency=workers
    )

    assert run.status == RunStatus.COMPLETED
    assert run.trials.filter(outcome=Outcome.SUCCESS).count() == 4  # all of its trials
    failed = list(run.trials.filter(outcome=Outcome.PROVIDER_FAILURE))
    assert 1 <= len(failed) == provider.refused["create"] <= workers  # never a run of refills
    for trial in failed:  # kept, named, and refilled by a success
        assert "Connection refused" in trial.cause and not trial.cut_short
        [error] = trial.evidence.filter(kind="create_error")
        assert error.data["unreachable"] == "connection refused"
        assert trial.replaced_by.get().outcome == Outcome.SUCCESS
    assert run.manifest["topups"]["local"]["stopped"] == (
        "every unit reached its target or its 2N attempts"
    )
    assert run.trials.count() == 4 + len(failed) <= 8  # within 2N: no budget spent by the outage
    # 0 lost, 0 run twice, 0 leaked: every trial ended once, one sandbox per success.
    assert not run.trials.exclude(state=TrialState.DONE).exists()
    assert provider.created == 4 and local.list_sandboxes() == []

    waits = run.manifest["backend_waits"]["local"]
    first = waits[0]
    assert first["back"] and first["reason"] == "connection refused"
    assert first["trial_seq"] in {t.seq for t in failed}
    assert first["probes"] >= 2 and 50 <= first["waited_s"] <= 90
    assert "last_error" not in first  # the last probe was answered
    assert all(w["back"] for w in waits) and len(waits) == len(failed)
    # The failed trial was stored before the wait began, so it neither ran on nor looked
    # orphaned while the chain probed; with one worker, no trial ran at all during the wait.
    assert running and all(failures >= 1 for _, failures in running)
    if workers == 1:
        assert {count for count, _ in running} == {0}


def test_a_backend_that_never_comes_back_fails_the_chain_within_the_bound(
    chain_provider, local, monkeypatch, skipped_time, settings
):
    settings.RUNNER_BACKEND_WAIT_S = 90
    run, provider, _ = run_with_outage(
        local, chain_provider, monkeypatch, skipped_time, down_s=10_000
    )

    assert run.status == RunStatus.FAILED
    [wait] = run.manifest["backend_waits"]["local"]
    assert not wait["back"] and wait["waited_s"] == pytest.approx(90, abs=1)
    assert wait["probes"] == 9 and "Connection refused" in wait["last_error"]
    reason = (
        "the backend stayed unreachable for 90 s of waiting (BOXBENCH_BACKEND_WAIT_SECONDS) "
        "after a create failed (connection refused); last probe: connection refused "
        "(NotReady: list: http://127.0.0.1:"
    )
    assert run.manifest["chains"]["local"]["error"].startswith(reason)
    assert runs.chain_notes(run)[0].startswith(f"local: {reason}")
    assert run.transitions.get(to_status=RunStatus.FAILED).note.startswith(
        f"no trial succeeded: local: {reason}"
    )
    assert run.manifest["topups"]["local"]["stopped"].startswith(
        f"a failure cannot be replaced: {reason}"
    )
    # The refused create is kept as a provider failure; nothing else was attempted.
    failed = run.trials.get(outcome=Outcome.PROVIDER_FAILURE)
    assert failed.evidence.get(kind="create_error").data["unreachable"] == "connection refused"
    assert provider.refused["create"] == 1 and provider.created == 0
    cancelled = run.trials.filter(state=TrialState.CANCELLED)
    assert cancelled.count() == 3
    assert all(t.cause.startswith("the chain stopped: the backend stayed") for t in cancelled)
    assert not run.trials.filter(state__in=[TrialState.QUEUED, TrialState.RUNNING]).exists()
    assert local.list_sandboxes() == []


def test_a_wait_longer_than_the_orphan_limit_leaves_nothing_for_recovery(
    chain_provider, local, settings
):
    """Real time here: the chain's heartbeat must carry the step through a wait that outlasts
    the orphan limit, and no trial may be left running for recovery to end."""
    from runner import recovery

    settings.RUNNER_HEARTBEAT_S, settings.RUNNER_ORPHAN_AFTER_S = 1, 4
    provider = chain_provider(BackendOutage(local, time.monotonic, down_s=9))
    sweeps = []

    def sweep_at_the_third_probe():  # 1 + 2 + 4 s into the wait: past the 4 s limit
        if provider.refused["list"] == 3:
            report = recovery.recover_orphans()
            sweeps.append((time.monotonic() - provider.down_from, report.orphans, report.resumed))

    provider.on_refused_list = sweep_at_the_third_probe
    run = plan_run(
        "outage", benchmarks=["create"], providers=["local"], trials=2, seed=1, concurrency=1
    )
    run.transition(RunStatus.RUNNING)
    steps.execute_chain(run.pk, "local")
    run.refresh_from_db()

    [(waited, orphans, resumed)] = sweeps
    assert waited > settings.RUNNER_ORPHAN_AFTER_S
    assert orphans == [] and resumed == []  # neither the trial nor the step looked lost
    assert run.status == RunStatus.COMPLETED
    assert run.trials.filter(outcome=Outcome.SUCCESS).count() == 2
    assert not run.trials.filter(cut_short=True).exists()
    [wait] = run.manifest["backend_waits"]["local"]
    assert wait["back"] and wait["probes"] == 4  # back at the probe after 1 + 2 + 4 + 8 s
    assert local.list_sandboxes() == []
