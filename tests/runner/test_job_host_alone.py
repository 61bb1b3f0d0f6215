"""Each provider's chain is timed alone on its job host: chains planned on one host take turns,
a provider given a dedicated host runs beside the others, the manifest names any chains that
were timed at once on one host, and the audit's host check counts those trials as loaded."""

from datetime import UTC, datetime, timedelta

import pytest

from boxbench.models import ChainProgress, ChainState, RunStatus
from runner import plan, rules, steps, store
from runner.plan import plan_run

pytestmark = pytest.mark.django_db

CLOUD = ["daytona", "e2b"]


@pytest.fixture
def cloud_plan(chain_provider, monkeypatch):
    """Plans of cloud providers, run by `local` here (only the schedule matters), with the
    queue's enqueue recorded instead of sent."""
    monkeypatch.setattr(plan, "unavailable", lambda slugs: [])
    sent = []
    monkeypatch.setattr(steps, "enqueue", lambda run_id, p, step, host: sent.append((p, host)))

    def make(**kwargs):
        return plan_run("alone", benchmarks=["create"], providers=CLOUD, trials=1, seed=1, **kwargs)

    return make, sent


def test_two_cloud_chains_on_one_job_host_take_turns_instead_of_running_at_once(cloud_plan):
    make, sent = cloud_plan
    run = make()
    host = run.manifest["providers"]["e2b"]["job_host"]
    assert run.manifest["schedule"]["lanes"] == {f"host:{host}": CLOUD}
    assert "timed alone on its host" in run.manifest["schedule"]["reason"]
    steps.start_run(run)
    states = dict(ChainProgress.objects.filter(run=run).values_list("provider", "state"))
    assert states == {"daytona": ChainState.QUEUED, "e2b": ChainState.WAITING}
    assert sent == [("daytona", host)]  # one step at a time on the shared host


def test_providers_given_dedicated_job_hosts_run_beside_each_other(cloud_plan):
    make, sent = cloud_plan
    run = make(job_hosts={"daytona": "host-a", "e2b": "host-b"})
    assert run.manifest["schedule"]["lanes"] == {"host:host-a": ["daytona"], "host:host-b": ["e2b"]}
    steps.start_run(run)
    states = set(ChainProgress.objects.filter(run=run).values_list("state", flat=True))
    assert states == {ChainState.QUEUED}
    assert sorted(sent) == [("daytona", "host-a"), ("e2b", "host-b")]


def span(trial, provider, host, start, end):
    return rules.TrialSpan(trial, provider, host, start, end)


def test_only_trials_of_two_providers_at_once_on_one_host_count_as_overlapping():
    spans = [
        span("a1", "daytona", "h", 0, 10),
        span("a2", "daytona", "h", 5, 12),  # its own chain's trial: not an overlap
        span("b1", "e2b", "h", 11, 20),  # overlaps a2 only
        span("c1", "modal", "other", 0, 30),  # another host
        span("b2", "e2b", "h", 20, 25),  # starts as b1 ends: touching is not overlapping
    ]
    assert rules.cross_provider_overlaps(spans) == {"a2": {"e2b"}, "b1": {"daytona"}}
    assert rules.chain_overlaps(spans) == {"daytona": {"e2b": 1}, "e2b": {"daytona": 1}}


def test_the_manifest_records_chains_timed_at_once_on_one_job_host(cloud_plan):
    make, _ = cloud_plan
    run = make()
    run.transition(RunStatus.RUNNING)
    moment = datetime(2026, 12, 1, tzinfo=UTC)
    for index, trial in enumerate(run.trials.order_by("provider__slug")):
        start = moment + timedelta(seconds=5 * index)  # e2b starts while daytona still runs
        trial.started_at, trial.ended_at, trial.job_host = start, start + timedelta(seconds=10), "h"
        trial.save(update_fields=["started_at", "ended_at", "job_host"])
    store.record_chain_overlaps(run.pk)
    run.refresh_from_db()
    assert run.manifest["chain_overlaps"] == {"daytona": {"e2b": 1}, "e2b": {"daytona": 1}}
    for trial in run.trials.all():
        trial.job_host = trial.provider.slug  # each on a host of its own
        trial.save(update_fields=["job_host"])
    store.record_chain_overlaps(run.pk)
    run.refresh_from_db()
    assert "chain_overlaps" not in run.manifest


def test_the_audits_host_check_counts_trials_timed_beside_another_chain_as_loaded():
    from stats.audit import audit
    from tests.stats.synthetic import clean_pair

    frame = clean_pair(n=20)
    frame["other_chain_on_host"] = 0.0
    assert audit(frame)["pairs"][0]["checks"]["host_saturated"]["verdict"] == "pass"
    frame.loc[:1, "other_chain_on_host"] = 1.0  # 2 trials, though the load read cool
    check = audit(frame)["pairs"][0]["checks"]["host_saturated"]
    assert check["verdict"] == "note" and check["details"]["other_chain_on_host"] == 2
    frame.loc[:5, "other_chain_on_host"] = 1.0
    frame.loc[:5, "value"] *= 1.5  # slowed by the other chain
    check = audit(frame)["pairs"][0]["checks"]["host_saturated"]
    assert check["verdict"] == "fail" and check["details"]["other_chain_on_host"] == 6
