import pytest
from django.contrib.auth.models import User

from boxbench.models import AuditResolution, Benchmark, Provider, Run, RunTransition

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(User.objects.create_superuser("root", password="pw-root-123"))
    return client


def publish_action(client, run):
    # The run page's Publish button, after its preview (tests/web/test_control_room.py).
    return client.post(f"/runs/{run.id}/publish/", follow=True)


def test_it_publishes_from_the_run_page_and_names_the_pairs_held_back(admin_client, imported_run):
    page = publish_action(admin_client, imported_run).content.decode()
    assert "published; held back:" in page and "local / create" in page
    assert Run.objects.get(id=imported_run.id).published


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


@pytest.mark.parametrize("private", [False, True])
def test_unsuccessful_trials_show_in_the_admin_only_with_private_evidence(
    client, imported_run, private
):
    from django.contrib.auth.models import Permission

    from boxbench.models import Outcome, Trial

    user = User.objects.create_user("looker", password="pw-looker-123", is_staff=True)
    # The imported run is unpublished: view_unpublished_run shows its trials at all.
    codenames = ["view_trial", "view_unpublished_run"]
    codenames += ["view_private_evidence"] if private else []
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client.force_login(user)
    failed = Trial.objects.filter(run=imported_run).exclude(outcome=Outcome.SUCCESS)
    assert failed.exists()  # the fixture has unsuccessful attempts
    trials = client.get("/admin/boxbench/trial/?all=")
    shown = Trial.objects.all() if private else Trial.objects.filter(outcome=Outcome.SUCCESS)
    assert trials.context["cl"].result_count == shown.count()
    # A trial's measurements are on its own page, which only those who may see it reach.
    success = shown.filter(outcome=Outcome.SUCCESS).exclude(metrics={}).first()
    page = client.get(f"/admin/boxbench/trial/{success.pk}/change/").content.decode()
    name, value = next(iter(success.metrics.items()))
    assert f"&quot;{name}&quot;: {value}" in page
    page = client.get(f"/admin/boxbench/trial/{failed.first().pk}/change/")
    # The admin answers an object outside its queryset as one that does not exist.
    assert page.status_code == (200 if private else 302)
