"""The Density benchmark: idle sandboxes until the provider refuses or the cap, on `local` for
real and against E2B's fake, every sandbox confirmed gone, the refusal's class and message kept."""

import io

import pytest
from django.core.management import call_command

from boxbench.models import Outcome, Run, Trial, TrialState
from runner import chain
from runner.providers import demo
from tests.providers.cloud.helpers import LIMITS

pytestmark = pytest.mark.django_db(transaction=True)


def test_on_local_it_reaches_the_cap_records_memory_and_leaves_nothing(
    chain_provider, local, settings
):
    settings.DENSITY_CAP = 3
    call_command(
        "bench", "run", "--provider", "local", "--benchmark", "density", "--trials", "1",
        "--inline", stdout=io.StringIO(),
    )  # fmt: skip
    trial = Trial.objects.get(state=TrialState.DONE)
    assert trial.outcome == Outcome.SUCCESS, trial.cause
    assert trial.metrics["sandboxes_reached"] == 3 and trial.metrics["refused"] == 0
    assert [r["outcome"] for r in trial.requests] == ["ok"] * 3
    # What each sandbox's memory cgroup held, read per sandbox: never the host's noisy drop.
    assert trial.metrics["memory_per_sandbox_mib"] > 0
    assert local.list_sandboxes() == []  # every one confirmed gone


def test_the_memory_per_idle_sandbox_is_the_mean_of_what_each_one_holds(
    chain_provider, local, settings, monkeypatch
):
    settings.DENSITY_CAP = 3
    held = iter([1, 2, 6])
    monkeypatch.setattr(type(local), "memory_in_use", lambda self, sandbox: next(held) * 2**20)
    call_command(
        "bench", "run", "--provider", "local", "--benchmark", "density", "--trials", "1",
        "--inline", stdout=io.StringIO(),
    )  # fmt: skip
    trial = Trial.objects.get(state=TrialState.DONE)
    assert trial.metrics["memory_per_sandbox_mib"] == 3.0


def test_a_live_local_sandbox_reports_what_its_memory_cgroup_holds(local):
    from runner.providers.base import SandboxSpec

    sandbox = local.create(SandboxSpec(2, 4096, "bb-memory", 120))
    try:
        before = local.memory_in_use(sandbox)
        local.exec(sandbox, ["/bin/sh", "-c", "head -c 20000000 /dev/zero > /tmp/fill"], 60)
        after = local.memory_in_use(sandbox)
    finally:
        local.destroy(sandbox)
    assert before is not None and before > 0
    assert after is not None and after - before >= 15_000_000  # /tmp is tmpfs, charged to it


def test_against_a_full_account_it_records_the_refusal_class_and_message(monkeypatch, settings, db):
    settings.DENSITY_CAP = 5
    original = demo.fake_class

    def fake_class(slug):
        class Small(original(slug)):
            def __init__(self, root, **options):
                super().__init__(root, **options)
                self.backend.max_concurrent = 2

        return Small

    monkeypatch.setattr(demo, "fake_class", fake_class)
    monkeypatch.setattr(chain, "lifecycle_limits", LIMITS)
    call_command(
        "bench", "run", "--demo", "--provider", "e2b", "--benchmark", "density", "--trials", "1",
        stdout=io.StringIO(),
    )  # fmt: skip
    [trial] = Run.objects.get().trials.filter(state=TrialState.DONE)
    assert trial.outcome == Outcome.SUCCESS, trial.cause  # a refusal is the measurement
    assert trial.metrics["sandboxes_reached"] == 2 and trial.metrics["refused"] == 1
    refusal = trial.requests[-1]
    assert refusal["outcome"] == "rate_limited"
    assert "HTTP 429" in refusal["cause"]
    assert "maximum number of concurrent E2B sandboxes (2)" in refusal["cause"]  # E2B's words
    assert "memory_per_sandbox_mib" not in trial.metrics  # E2B's sandboxes are not on this host
    # Created once a second, E2B's declared creation rate.
    assert [r["planned_ms"] // 1000 for r in trial.requests] == [0, 1, 2]


def test_against_daytonas_fake_it_reaches_the_documented_pool_and_keeps_its_refusal(
    monkeypatch, settings, db
):
    """Nothing planted: Daytona's fake holds Tier 1's pool of 10 GiB, so two sandboxes of 4 GiB,
    and refuses the third as Daytona does (403), which counts as the account's limit."""
    settings.DENSITY_CAP = 5
    monkeypatch.setattr(chain, "lifecycle_limits", LIMITS)
    call_command(
        "bench", "run", "--demo", "--provider", "daytona", "--benchmark", "density",
        "--trials", "1", stdout=io.StringIO(),
    )  # fmt: skip
    [trial] = Run.objects.get().trials.filter(state=TrialState.DONE)
    assert trial.outcome == Outcome.SUCCESS, trial.cause
    assert trial.metrics["sandboxes_reached"] == 2 and trial.metrics["refused"] == 1
    refusal = trial.requests[-1]
    assert refusal["outcome"] == "rate_limited"
    assert "HTTP 403" in refusal["cause"]
    assert "Total memory limit exceeded. Maximum allowed: 10GiB." in refusal["cause"]
