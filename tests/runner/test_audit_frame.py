"""The audit input carries each provider's declared shares_job_host, and the audit reads it."""

import pytest

from boxbench import audit_input, publishing
from boxbench.models import Provider
from tests.web.conftest import imported_run  # noqa: F401 (a fixture)


@pytest.mark.django_db
def test_it_marks_the_trials_of_a_provider_that_shares_the_job_host(imported_run):  # noqa: F811
    local = Provider.objects.get(slug="local")
    local.declaration = {**local.declaration, "shares_job_host": True}
    local.save(update_fields=["declaration"])

    frame = audit_input.audit_frame(imported_run)

    shares = frame.groupby("provider")["shares_job_host"].unique().to_dict()
    assert [bool(v) for v in shares["local"]] == [True]
    assert [bool(v) for v in shares["docker"]] == [False]  # declaration without the field


@pytest.mark.django_db
def test_it_reports_host_saturated_unassessed_only_for_the_provider_on_the_job_host(
    imported_run,  # noqa: F811
):
    local = Provider.objects.get(slug="local")
    local.declaration = {**local.declaration, "shares_job_host": True}
    local.save(update_fields=["declaration"])

    publishing.run_audit(imported_run)

    reasons = {
        (pair["provider"], pair["benchmark"]): pair["checks"]["host_saturated"]
        for pair in imported_run.audit_report["pairs"]
    }
    on_job_host = [c for (provider, _), c in reasons.items() if provider == "local"]
    elsewhere = [c for (provider, _), c in reasons.items() if provider != "local"]
    assert on_job_host and elsewhere
    assert all(c["verdict"] == "unassessed" for c in on_job_host)
    assert all("shares_job_host" in c["reason"] for c in on_job_host)
    assert not any("shares_job_host" in c["reason"] for c in elsewhere)
