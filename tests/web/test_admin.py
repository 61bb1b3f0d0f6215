import pytest
from django.contrib.auth.models import User

from boxbench.models import AuditResolution, Benchmark, Provider, Run, RunTransition

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(User.objects.create_superuser("root", password="pw-root-123"))
    return client


def publish_action(client, run):
    return client.post(
        "/admin/boxbench/run/",
        {"action": "publish_runs", "_selected_action": [str(run.id)]},
        follow=True,
    )


def test_it_refuses_to_publish_from_the_admin_while_a_failure_is_open(admin_client, imported_run):
    page = publish_action(admin_client, imported_run).content.decode()
    assert "unresolved audit failures" in page and "local / create / trend" in page
    assert not Run.objects.get(id=imported_run.id).published


def test_it_records_a_resolution_with_its_actor_and_then_publishes(admin_client, imported_run):
    admin_client.post(
        "/admin/boxbench/run/", {"action": "audit_runs", "_selected_action": [str(imported_run.id)]}
    )
    for provider in ("local", "docker", "boat"):
        response = admin_client.post(
            "/admin/boxbench/auditresolution/add/",
            {
                "run": str(imported_run.id),
                "provider": Provider.objects.get(slug=provider).id,
                "benchmark": Benchmark.objects.get(slug="create").id,
                "check_name": "trend",
                "kind": "explained",
                "note": "Create slows down over the run.",
            },
        )
        assert response.status_code == 302, response.content.decode()[:2000]
    assert set(AuditResolution.objects.values_list("actor__username", flat=True)) == {"root"}
    publish_action(admin_client, imported_run)
    assert Run.objects.get(id=imported_run.id).published
    publication = RunTransition.objects.get(run=imported_run, note="published")
    assert publication.actor.username == "root"
    assert (publication.from_status, publication.to_status) == ("completed", "completed")


def test_it_rejects_a_resolution_of_a_check_that_did_not_fail(admin_client, imported_run):
    admin_client.post(
        "/admin/boxbench/run/", {"action": "audit_runs", "_selected_action": [str(imported_run.id)]}
    )
    response = admin_client.post(
        "/admin/boxbench/auditresolution/add/",
        {
            "run": str(imported_run.id),
            "provider": Provider.objects.get(slug="local").id,
            "benchmark": Benchmark.objects.get(slug="cpu").id,
            "check_name": "trend",
            "kind": "explained",
            "note": "nothing failed",
        },
    )
    assert response.status_code == 200 and b"did not fail the audit" in response.content
    assert not AuditResolution.objects.exists()
