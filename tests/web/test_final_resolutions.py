"""A published run's audit resolutions are final: no edit or deletion, in the admin or anywhere
else, can put a held-back pair on the board (or take one off) without a publication."""

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from boxbench import publishing
from boxbench.models import (
    Aggregate,
    AuditResolution,
    FinalResolution,
    Run,
    Scope,
)
from tests.support.web import resolution_of, resolve

pytestmark = pytest.mark.django_db


@pytest.fixture
def auditor(client):
    client.force_login(User.objects.create_superuser("auditor", password="pw-auditor-123"))
    return client


@pytest.fixture
def held_by_rerun(imported_run):
    """The fixture run published with docker's Create pair resolved as re-run (held back) and
    the other two explained: the resolution an auditor would like to change afterwards."""
    rerun = Run.objects.create(name="a re-run", status="completed", manifest={})
    publishing.run_audit(imported_run)
    for provider, kind in (("local", "explained"), ("boat", "explained"), ("docker", "rerun")):
        rerun_ = rerun if kind == "rerun" else None
        resolve(imported_run, provider, kind=kind, note="recorded before publication", rerun=rerun_)
    publishing.publish(imported_run)
    assert "docker" not in ranked_on_create()
    return AuditResolution.objects.get(provider__slug="docker")


def ranked_on_create() -> list[str]:
    create = Aggregate.objects.page(Scope.BENCHMARK, "create") or {"rows": []}
    return sorted(r["provider"] for r in create["rows"] if r["ranked"])


def change_form(resolution, **changes) -> dict:
    return {
        "run": str(resolution.run_id),
        "provider": resolution.provider_id,
        "benchmark": resolution.benchmark_id,
        "check_name": resolution.check_name,
        "kind": resolution.kind,
        "note": resolution.note,
        "rerun": str(resolution.rerun_id or ""),
        **changes,
    }


def test_an_auditor_cannot_turn_a_rerun_into_an_explanation_in_the_admin(auditor, held_by_rerun):
    url = f"/admin/boxbench/auditresolution/{held_by_rerun.pk}/change/"
    response = auditor.post(url, change_form(held_by_rerun, kind="explained", rerun=""))
    assert response.status_code == 403
    held_by_rerun.refresh_from_db()
    assert held_by_rerun.kind == "rerun"
    # The next materialization (another run's publication, a deletion) changes nothing.
    publishing.rematerialize()
    assert "docker" not in ranked_on_create()
    page = auditor.get(url).content.decode()
    assert 'name="kind"' not in page  # shown read-only


def test_an_auditor_cannot_delete_a_published_runs_resolution(auditor, held_by_rerun):
    explained = AuditResolution.objects.get(provider__slug="local")
    url = f"/admin/boxbench/auditresolution/{explained.pk}/delete/"
    assert auditor.post(url, {"post": "yes"}).status_code == 403
    bulk = auditor.post(
        "/admin/boxbench/auditresolution/",
        {"action": "delete_selected", "_selected_action": [explained.pk], "post": "yes"},
    )
    assert bulk.status_code in (200, 302, 403)
    assert AuditResolution.objects.filter(pk=explained.pk).exists()
    publishing.rematerialize()
    assert ranked_on_create() == ["boat", "local"]


def test_a_published_runs_resolution_is_final_outside_the_admin_too(held_by_rerun):
    held_by_rerun.kind = "explained"
    with pytest.raises(FinalResolution, match="is final"):
        held_by_rerun.save()
    with pytest.raises(FinalResolution, match="is final"):
        held_by_rerun.delete()
    with pytest.raises(publishing.PublishRefused, match="published and final"):
        publishing.apply_resolution(held_by_rerun)
    with pytest.raises(CommandError, match="already resolved"):
        call_command(
            "bench",
            "audit",
            str(held_by_rerun.run_id),
            "--resolve",
            "docker/create/trend",
            "--kind",
            "explained",
            "--note",
            "changed my mind",
        )
    assert AuditResolution.objects.get(pk=held_by_rerun.pk).kind == "rerun"
    publishing.rematerialize()
    assert "docker" not in ranked_on_create()


def test_an_unpublished_runs_resolution_can_still_be_corrected(auditor, imported_run):
    publishing.run_audit(imported_run)
    resolution = resolution_of(imported_run, "local", note="first thought")
    publishing.apply_resolution(resolution)
    url = f"/admin/boxbench/auditresolution/{resolution.pk}/change/"
    response = auditor.post(url, change_form(resolution, note="second thought"))
    assert response.status_code == 302, response.content.decode()[:2000]
    resolution.refresh_from_db()
    assert resolution.note == "second thought"
