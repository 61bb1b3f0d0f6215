"""The null provider: a whole run through the real chain (claim, heartbeat, lifecycle, store
write, tally, audit) on sandboxes that cost nothing, never offered and never published."""

import pytest

from boxbench import publishing
from boxbench.admin_forms import StartRunForm
from boxbench.models import Evidence, MeasurementName, Outcome, RunStatus, TrialState, TrialTally
from boxbench.public_catalog import declared_providers
from runner import clock, steps
from runner.benchmarks.latency_per_call import CALLS
from runner.plan import plan_run
from runner.providers import get_provider
from runner.providers.base import ProviderError, SandboxSpec

SPEC = SandboxSpec(cpus=2, memory_mib=4096, label="bb-test-null", lifetime_s=60)


def test_a_wrapped_command_on_it_reports_a_runtime_of_zero_that_passes_the_gate():
    provider = get_provider("null")
    sandbox = provider.create(SPEC)
    key = clock.new_key()
    wrapped = ["/bin/bash", "-c", clock.wrap("true")]
    result = provider.exec(sandbox, wrapped, timeout=5, stdin=clock.key_input(key))
    stderr, timing = clock.parse_trailer(result.stderr, key)
    assert (result.exit_code, result.stdout, stderr) == (0, b"", b"")
    assert timing is not None and timing.gate_ok and timing.wall_ms == 0.0
    provider.destroy(sandbox)
    assert provider.is_gone(sandbox.id) and provider.list_sandboxes("bb-test-null") == []
    with pytest.raises(ProviderError, match=f"sandbox {sandbox.id} does not exist"):
        provider.exec(sandbox, ["true"], timeout=5)


@pytest.mark.django_db(transaction=True)
def test_a_run_on_it_completes_is_audited_and_stores_every_trial(sync_queue):
    run = plan_run("null", benchmarks=["latency-per-call"], providers=["null"], trials=4, seed=1)
    run.transition(RunStatus.RUNNING)
    steps.execute_chain(run.pk, "null")
    run.refresh_from_db()

    assert run.status == RunStatus.COMPLETED and run.audit_report is not None
    trials = list(run.trials.order_by("seq"))
    assert [(t.state, t.outcome, t.round) for t in trials] == [
        (TrialState.DONE, Outcome.SUCCESS, r) for r in (1, 2, 3, 4)
    ]
    for trial in trials:
        assert len(trial.metrics) == CALLS + 1 and trial.metrics["latency_ms"] >= 0
        assert set(trial.clock_gates["metrics"].values()) == {"pass"}
        assert trial.placement["nproc"] == 2 and trial.job_host and trial.heartbeat_at
        kinds = set(Evidence.objects.filter(trial=trial).values_list("kind", flat=True))
        assert {"readiness", "lifecycle"} <= kinds
        lifecycle = Evidence.objects.get(trial=trial, kind="lifecycle").data
        assert lifecycle["cleanup_verified"] is True
    assert MeasurementName.objects.filter(run=run).count() == CALLS + 1
    tally = TrialTally.objects.get(run=run, state=TrialState.DONE, outcome=Outcome.SUCCESS)
    assert tally.n == 4
    assert get_provider("null").list_sandboxes() == []
    with pytest.raises(publishing.PublishRefused, match="null adapter"):
        publishing.publish(run)


def test_it_is_never_offered_to_start_a_run_or_shown_to_visitors():
    offered = [slug for slug, _ in StartRunForm().fields["providers"].choices]
    assert "local" in offered and "null" not in offered
    assert "local" in declared_providers() and "null" not in declared_providers()
