"""Several failing checks resolved at once, from the command line and in one admin form: one
recorded AuditResolution per check, all or none, and the admin says what it saved."""

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from boxbench import holdbacks, publishing
from boxbench.models import AuditResolution

pytestmark = pytest.mark.django_db


@pytest.fixture
def audited_run(imported_run):
    publishing.run_audit(imported_run)
    assert len(holdbacks.failing_checks(imported_run.audit_report)) >= 2
    return imported_run


def recorded():
    return set(
        AuditResolution.objects.values_list("provider__slug", "benchmark__slug", "check_name")
    )


def test_one_cli_call_resolves_every_failing_check(audited_run, capsys):
    failing = holdbacks.failing_checks(audited_run.audit_report)
    call_command(
        "bench",
        "audit",
        audited_run.name,
        "--resolve-failing",
        "--kind",
        "explained",
        "--note",
        "The job host was busy.",
    )
    assert recorded() == set(failing)
    assert set(AuditResolution.objects.values_list("note", flat=True)) == {"The job host was busy."}
    out = capsys.readouterr().out
    assert (
        f"Recorded {len(failing)} resolution(s)" in out and "Every failing check is resolved" in out
    )
    assert holdbacks.unresolved_failures(audited_run) == []


def test_the_cli_narrows_the_set_by_provider_and_check(audited_run, capsys):
    call_command(
        "bench",
        "audit",
        audited_run.name,
        "--resolve-failing",
        "--check",
        "trend",
        "--provider",
        "docker",
        "--kind",
        "explained",
        "--note",
        "busy host",
    )
    assert recorded() == {("docker", "create", "trend")}
    assert "still unresolved" in capsys.readouterr().out


def test_the_cli_records_nothing_when_one_of_them_cannot_be_resolved(audited_run):
    # Excluding outliers resolves only the outliers check: nothing at all is recorded.
    with pytest.raises(CommandError, match="nothing recorded: only the outliers check"):
        call_command(
            "bench",
            "audit",
            audited_run.name,
            "--resolve-failing",
            "--kind",
            "outliers_excluded",
            "--note",
            "outliers",
        )
    assert not AuditResolution.objects.exists()


def test_the_cli_says_when_no_failing_check_matches(audited_run):
    with pytest.raises(CommandError, match="no unresolved failing check"):
        call_command(
            "bench",
            "audit",
            audited_run.name,
            "--resolve-failing",
            "--check",
            "nope",
            "--kind",
            "explained",
            "--note",
            "n",
        )


@pytest.fixture
def root_client(client):
    client.force_login(User.objects.create_superuser("root", password="pw-root-123"))
    return client


def test_one_admin_form_resolves_several_checks_and_says_what_it_saved(root_client, audited_run):
    url = f"/admin/boxbench/run/{audited_run.id}/resolve/"
    form = root_client.get(url).content.decode()
    failing = ["/".join(f) for f in holdbacks.failing_checks(audited_run.audit_report)]
    for check in failing:
        assert f'value="{check}"' in form
    chosen = failing[:2]
    response = root_client.post(
        url, {"checks": chosen, "kind": "explained", "note": "Busy job host."}, follow=True
    )
    assert response.redirect_chain[-1][0] == f"/runs/{audited_run.id}/"
    page = response.content.decode()
    assert (
        f"Recorded 2 resolution(s) (Effect explained in the record): {', '.join(chosen)}." in page
    )
    assert recorded() == {tuple(c.split("/")) for c in chosen}
    assert set(AuditResolution.objects.values_list("actor__username", flat=True)) == {"root"}


def test_the_admin_form_refuses_outlier_exclusion_for_other_checks(root_client, audited_run):
    url = f"/admin/boxbench/run/{audited_run.id}/resolve/"
    failing = ["/".join(f) for f in holdbacks.failing_checks(audited_run.audit_report)]
    response = root_client.post(url, {"checks": failing, "kind": "outliers_excluded", "note": "n"})
    assert response.status_code == 200
    assert "Only the outliers check is resolved by excluding outliers" in response.content.decode()
    assert not AuditResolution.objects.exists()


def test_the_admin_form_needs_the_resolution_permission(client, audited_run):
    client.force_login(User.objects.create_user("viewer", password="pw-viewer-1", is_staff=True))
    response = client.get(f"/admin/boxbench/run/{audited_run.id}/resolve/")
    assert response.status_code == 403


def test_the_refused_runs_page_offers_both_bulk_ways(root_client, audited_run):
    page = root_client.get(f"/runs/{audited_run.id}/").content.decode()
    assert f'href="/admin/boxbench/run/{audited_run.id}/resolve/"' in page
    assert "--resolve-failing --kind explained" in page
