"""The Burst benchmark end to end: bursts run for real on `local` and against the E2B fake,
tiers above an account's limit not run, `rate_limited` answers counted apart, a failed burst
re-run whole, a starved job host a benchmark error, and the requests in the raw data."""

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from boxbench.models import Outcome, Run, Trial, TrialState
from boxbench.rawdata import FULL, export_jsonl, import_jsonl
from boxbench.rawdata.schema import SCHEMA_VERSION
from runner import chain, steps
from runner.benchmarks import burst
from runner.plan import plan_run
from runner.providers import demo
from tests.providers.cloud.helpers import LIMITS
from tests.runner.faults import FaultyProvider

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def patient(monkeypatch):
    """A scheduling-delay bound no test host's load can reach: these tests are about what a
    burst records, not about this host's speed (the bound has its own test below)."""
    monkeypatch.setattr(burst, "SCHEDULING_BOUND_MS", 600_000.0)


def bench_run(*argv) -> str:
    out = io.StringIO()
    call_command("bench", "run", "--benchmark", "burst", "--inline", *argv, stdout=out)
    return out.getvalue()


def trials(**filters) -> list[Trial]:
    return list(Trial.objects.filter(state=TrialState.DONE, **filters).order_by("seq"))


def run_chain(run) -> Run:
    run.transition("running")
    steps.execute_chain(run.pk, "local")
    run.refresh_from_db()
    return run


def test_bursts_run_on_local_for_the_tiers_given_and_a_tier_above_its_limit_is_not_run(
    chain_provider, patient
):
    out = bench_run(
        "--provider", "local", "--unit", "1,8,32", "--trials", "3", "--concurrency", "3"
    )
    assert "refused local / burst / 32: R403 Account Limit (32 concurrent sandboxes > 8)" in out
    assert "not run: 32: R403 Account Limit" in out
    run = Run.objects.get()
    assert run.status == "completed"
    assert run.manifest["benchmarks"]["burst"]["parallel_trials"] == 1  # bursts never overlap
    done = trials()
    assert sorted(t.unit.slug for t in done) == ["1", "1", "1", "8", "8", "8"]
    for trial in done:
        tier = int(trial.unit.slug)
        assert trial.outcome == Outcome.SUCCESS, trial.cause
        assert len(trial.requests) == tier
        assert [r["outcome"] for r in trial.requests] == ["ok"] * tier
        assert all(r["planned_ms"] == 0 for r in trial.requests)  # local declares no rate
        for r in trial.requests:
            assert r["planned_ms"] <= r["sent_ms"] < r["created_ms"] < r["ready_ms"]
        metrics = trial.metrics
        assert metrics["requests"] == tier and metrics["success_share"] == 1
        assert metrics["last_ready_ms"] == max(r["ready_ms"] for r in trial.requests)
        delays = [r["sent_ms"] - r["planned_ms"] for r in trial.requests]
        assert metrics["sched_delay_max_ms"] == pytest.approx(max(delays))


def test_the_requests_go_to_the_raw_data_and_import_back(chain_provider, patient, tmp_path):
    bench_run("--provider", "local", "--unit", "8", "--trials", "1")
    exported = "".join(export_jsonl(Run.objects.get(), FULL))
    [line] = [json.loads(t) for t in exported.splitlines() if '"type":"trial"' in t]
    assert len(line["requests"]) == 8 and line["requests"][0]["outcome"] == "ok"
    assert json.loads(exported.splitlines()[0])["schema_version"] == SCHEMA_VERSION
    Run.objects.all().delete()
    path = tmp_path / "burst.jsonl"
    path.write_text(exported)
    again = import_jsonl(path).run
    assert "".join(export_jsonl(again, FULL)) == exported
    assert Trial.objects.get().requests == line["requests"]


def test_a_burst_with_a_failed_request_is_re_run_whole(chain_provider, patient, local):
    chain_provider(FaultyProvider(local, create_errors=1))
    run = run_chain(
        plan_run(
            "burst", benchmarks=["burst"], providers=["local"], units={"burst": ["8"]}, trials=1
        )
    )
    failed, again = trials(run=run)
    assert failed.outcome == Outcome.PROVIDER_FAILURE
    assert failed.cause.startswith("1 of 8 requests failed; the first, #")
    outcomes = sorted(r["outcome"] for r in failed.requests)
    assert outcomes == ["ok"] * 7 + ["provider_error"]
    assert again.replaces_id == failed.pk and again.outcome == Outcome.SUCCESS
    assert [r["outcome"] for r in again.requests] == ["ok"] * 8  # all 8 again, not the one


def test_a_starved_job_host_is_the_benchmark_error_never_the_provider_failure(
    chain_provider, monkeypatch
):
    import time

    late = burst.SCHEDULING_BOUND_MS / 1000 + 0.2
    monkeypatch.setattr(burst.Burst, "sleep", staticmethod(lambda s: time.sleep(s + late)))
    run = run_chain(
        plan_run(
            "burst", benchmarks=["burst"], providers=["local"], units={"burst": ["1"]}, trials=2
        )
    )
    [starved] = trials(run=run)
    assert (starved.outcome, starved.owner) == (Outcome.BENCHMARK_ERROR, "environment")
    assert "ms bound: the burst measured the job host" in starved.cause
    assert starved.metrics["sched_delay_max_ms"] > burst.SCHEDULING_BOUND_MS
    assert run.trials.filter(state=TrialState.CANCELLED).count() == 1  # the tier stopped


@pytest.mark.parametrize(
    "unit, why",
    [
        ("0", "unit '0' of burst: a tier is a positive whole number of creates"),
        ("eight", "unit 'eight' of burst: a tier is a positive whole number of creates"),
        ("1000", "unit '1000' of burst: above the largest tier, 256 (BOXBENCH_BURST_MAX_TIER)"),
        ("16", "unit '16' of burst: not a configured tier: add it to BOXBENCH_BURST_TIERS"),
    ],
)
def test_a_tier_that_cannot_run_is_refused_at_planning_with_the_reason(chain_provider, unit, why):
    with pytest.raises(CommandError) as refused:
        bench_run("--provider", "local", "--unit", f"1,{unit}")
    assert why in str(refused.value)
    assert not Run.objects.exists()


def test_more_tiers_come_from_the_setting(chain_provider, settings):
    settings.BURST_TIERS = [1, 8, 16]
    assert [u.slug for u in burst.units()] == ["1", "8", "16"]


def demo_burst(monkeypatch, *argv, rate_per_s=None) -> Run:
    """A demo run of bursts against E2B's fake; `rate_per_s`: the fake's own creation rate,
    tighter than the 1 per second E2B documents (and boxbench's plan honours)."""
    original = demo.fake_class

    def fake_class(slug):
        class Limited(original(slug)):
            def __init__(self, root, **options):
                super().__init__(root, **options)
                if rate_per_s is not None:
                    self.backend.create_rate_per_s = rate_per_s

        return Limited

    monkeypatch.setattr(demo, "fake_class", fake_class)
    monkeypatch.setattr(chain, "lifecycle_limits", LIMITS)
    call_command(
        "bench", "run", "--demo", "--provider", "e2b", "--benchmark", "burst", *argv,
        stdout=io.StringIO(),
    )  # fmt: skip
    return Run.objects.get()


def test_against_the_e2b_fake_a_tier_is_paced_by_the_declared_rate(monkeypatch, patient, db):
    run = demo_burst(monkeypatch, "--unit", "1,8,32", "--trials", "1")
    [refusal] = run.typed_manifest.refusals
    assert (refusal.unit, refusal.label) == ("32", "Account Limit")  # E2B allows 20 at once
    paced = Trial.objects.get(unit__slug="8")
    assert paced.outcome == Outcome.SUCCESS, paced.cause
    # 1 create per second: the 8-tier is a ramp over 7 s, in its time to last ready too.
    assert [r["planned_ms"] for r in paced.requests] == [1000.0 * i for i in range(8)]
    assert paced.metrics["last_ready_ms"] > 7000


def test_rate_limited_answers_within_the_declared_limits_are_counted_apart(
    monkeypatch, patient, db
):
    run = demo_burst(monkeypatch, "--unit", "8", "--trials", "1", rate_per_s=0.5)
    [trial] = run.trials.filter(state=TrialState.DONE)
    assert trial.outcome == Outcome.SUCCESS, trial.cause  # not a provider failure
    # Sent once a second to a fake that admits one every two: about every other one is refused
    # (how many depends on each send's few milliseconds of delay against the fake's window).
    limited = [r for r in trial.requests if r["outcome"] == "rate_limited"]
    ok = [r for r in trial.requests if r["outcome"] == "ok"]
    assert limited and ok and len(limited) + len(ok) == 8
    assert "HTTP 429" in limited[0]["cause"]
    assert trial.metrics["rate_limited"] == len(limited)
    assert trial.metrics["success_share"] == 1.0  # every request the limit let through


def test_against_modals_fake_creates_past_its_rate_are_rate_limited_not_failures(
    monkeypatch, patient, db
):
    """Nothing planted: Modal declares no limit, so the 8-tier is sent at once, and its fake
    answers creates past 5 a second RESOURCE_EXHAUSTED, as Modal does."""
    monkeypatch.setattr(chain, "lifecycle_limits", LIMITS)
    call_command(
        "bench", "run", "--demo", "--provider", "modal", "--benchmark", "burst", "--unit", "8",
        "--trials", "1", stdout=io.StringIO(),
    )  # fmt: skip
    [trial] = Run.objects.get().trials.filter(state=TrialState.DONE)
    assert trial.outcome == Outcome.SUCCESS, trial.cause
    assert all(r["planned_ms"] == 0 for r in trial.requests)
    limited = [r for r in trial.requests if r["outcome"] == "rate_limited"]
    ok = [r for r in trial.requests if r["outcome"] == "ok"]
    assert len(ok) >= 5 and limited and len(ok) + len(limited) == 8
    assert "Sandbox creation rate limit (5/s) exceeded" in limited[0]["cause"]
    assert trial.metrics["rate_limited"] == len(limited)
    assert trial.metrics["success_share"] == 1.0
