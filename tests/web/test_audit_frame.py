"""The audit input carries each provider's declared shares_job_host and each round's first end
of any trial, and the audit reads them."""

import pytest

from boxbench import audit_input, publishing
from boxbench.models import Provider, Trial


@pytest.mark.django_db
def test_it_marks_the_trials_of_a_provider_that_shares_the_job_host(imported_run):
    local = Provider.objects.get(slug="local")
    local.declaration = {**local.declaration, "shares_job_host": True}
    local.save(update_fields=["declaration"])

    frame = audit_input.audit_frame(imported_run)

    shares = frame.groupby("provider")["shares_job_host"].unique().to_dict()
    assert [bool(v) for v in shares["local"]] == [True]
    assert [bool(v) for v in shares["docker"]] == [False]  # declaration without the field


@pytest.mark.django_db
def test_it_judges_host_saturated_for_the_provider_on_the_job_host_too(imported_run):
    local = Provider.objects.get(slug="local")
    local.declaration = {**local.declaration, "shares_job_host": True}
    local.save(update_fields=["declaration"])
    # Its benchmarks load the job host it runs on: every trial saturated it.
    Trial.objects.filter(run=imported_run, provider=local).update(
        host_load={"cpu_peak": 0.97, "mem_available_kib": 4_000_000}
    )

    publishing.run_audit(imported_run)

    checks = {
        (pair["provider"], pair["benchmark"]): pair["checks"]["host_saturated"]
        for pair in imported_run.audit_report["pairs"]
    }
    on_job_host = [c for (provider, _), c in checks.items() if provider == "local"]
    assert on_job_host and all(c["verdict"] == "fail" for c in on_job_host)
    assert all(c["details"]["shares_job_host"] is True for c in on_job_host)


@pytest.mark.django_db
def test_round_start_closes_at_the_first_end_of_any_trial_of_the_round(imported_run):
    # A provider failure of docker's create ended first in its round: the frame says so.
    failed = Trial.objects.get(
        run=imported_run,
        provider__slug="docker",
        benchmark__slug="create",
        outcome="provider_failure",
    )
    rnd = Trial.objects.filter(
        run=imported_run,
        provider__slug="docker",
        benchmark__slug="create",
        round=failed.round,
        outcome="success",
    )
    first = min(t.started_at for t in rnd)
    failed.ended_at = first
    failed.save(update_fields=["ended_at"])
    frame = audit_input.audit_frame(imported_run)
    rows = frame[(frame["provider"] == "docker") & (frame["benchmark"] == "create")]
    in_round = rows[rows["round"] == failed.round]
    assert (in_round["round_first_end"] == first.timestamp()).all()
    assert (in_round["round_first_end"] < in_round["ended_at"].min()).all()
