"""The admin's start form: named plans, each provider with the doctor's verdict, and an estimate
of trials, time and cost before anything starts."""

import statistics

import pytest

from boxbench import provider_status, run_estimate
from boxbench.models import Outcome, Run, Trial
from runner import named_plans
from runner.plan import plan_run
from runner.providers.base import DoctorCheck

pytestmark = pytest.mark.django_db

URL = "/admin/boxbench/run/start/"


@pytest.fixture(autouse=True)
def doctors(monkeypatch):
    """Each provider's doctor as `bench doctor` would report it on a machine with local only."""

    def checks(slug, declaration):
        if slug == "local":
            return [DoctorCheck("bwrap", True, "bubblewrap 0.8")]
        if slug == "docker":
            return [DoctorCheck("engine", False, "no engine answers at unix:///run/podman.sock")]
        return [DoctorCheck.not_configured("credentials", f"set {slug.upper()}_API_KEY")]

    monkeypatch.setattr(provider_status, "provider_checks", checks)


def test_it_offers_the_named_plans_and_each_providers_verdict(admin_client):
    page = admin_client.get(URL).content.decode()
    for name in named_plans.PLANS:
        assert f'<option value="{name}">{name}: ' in page
    assert 'type="checkbox" name="providers" value="local"' in page
    verdicts = page[page.index('id="provider-verdicts"') :]
    assert "<td>local</td><td><b>configured</b></td><td>bwrap: bubblewrap 0.8</td>" in verdicts
    assert "<td>docker</td><td>failing</td>" in verdicts and "no engine answers" in verdicts
    assert "<td>e2b</td><td>not configured</td><td>set E2B_API_KEY</td>" in verdicts
    assert "(not configured)" in page  # beside the provider's checkbox too


def test_the_estimate_counts_the_trials_the_plan_would_queue_and_starts_nothing(admin_client):
    response = admin_client.post(
        URL, {"name": "try", "plan": "default", "providers": ["local"], "_estimate": "1"}
    )
    assert response.status_code == 200 and not Run.objects.exists()
    estimate = response.context["estimate"]
    plan = named_plans.get_plan("default")
    run = plan_run(
        "counted",
        benchmarks=list(plan.benchmarks),
        units=plan.units,
        providers=["local"],
        trials=plan.trials,
        concurrency=plan.concurrency,
    )
    assert estimate["trials"] == Trial.objects.filter(run=run).count() > 0
    page = response.content.decode()
    assert f"Estimate: {estimate['trials']} trials over" in page
    assert "never measured here: a guess" in page  # nothing was measured in this database
    assert "a guess" in page[page.index('id="estimate-pairs"') :]


def test_the_estimate_uses_the_recent_measured_trials_where_there_are_any(imported_run):
    found = run_estimate.estimate(["create"], ["local"], trials=20)
    [pair] = found["pairs"]
    trials = Trial.objects.filter(
        run=imported_run, provider__slug="local", benchmark__slug="create", outcome=Outcome.SUCCESS
    )
    seconds = [(t.ended_at - t.started_at).total_seconds() for t in trials]
    assert pair.measured == len(seconds) > 0
    assert pair.trial_s == statistics.median_low(seconds)
    assert found["guessed"] == 0 and found["trials"] == 20


@pytest.mark.parametrize(
    "posted, problem",
    [
        ({"plan": "default", "benchmarks": ["create"]}, "choose a plan or tick benchmarks"),
        ({}, "Choose a plan or tick at least one benchmark."),
        ({"plan": "nightly"}, "Select a valid choice. nightly is not one of"),
    ],
    ids=["both", "neither", "an unknown plan"],
)
def test_a_bad_start_form_says_what_is_wrong_and_starts_nothing(admin_client, posted, problem):
    data = {"name": "bad", "providers": ["local"], "_estimate": "1", **posted}
    response = admin_client.post(URL, data)
    assert response.status_code == 200 and not Run.objects.exists()
    assert problem in response.content.decode()
    assert response.context["estimate"] is None


def test_a_provider_whose_doctor_does_not_answer_is_unknown_not_broken(monkeypatch):
    import threading

    release = threading.Event()

    def slow(slug, declaration):
        release.wait(5)
        return []

    monkeypatch.setattr(provider_status, "provider_checks", slow)
    try:
        found = provider_status.verdicts(wait_s=0.01)
    finally:
        release.set()
    assert {v.state for v in found.values()} == {"unknown"}
    assert "did not answer within 0.01 s" in found["local"].detail
