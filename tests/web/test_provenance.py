"""A completed run's provenance is read-only in the admin: its manifest, audit report, times,
transitions and trials are viewed, never edited or deleted one by one. A whole run can be
deleted, after confirmation, and the deletion is recorded."""

import logging

import pytest
from django.contrib.admin.models import DELETION, LogEntry
from django.contrib.auth.models import User

from boxbench.models import Aggregate, Evidence, MeasurementName, Run, Trial
from tests.support.web import make_running
from tests.web import factory

pytestmark = pytest.mark.django_db
RUN_ADMIN = f"/admin/boxbench/run/{factory.RUN_ID}/"


@pytest.fixture
def root_client(client):
    client.force_login(User.objects.create_superuser("root", password="pw-root-123"))
    return client


def test_a_completed_runs_page_in_the_admin_is_view_only(root_client, imported_run):
    page = root_client.get(RUN_ADMIN + "change/").content.decode()
    assert 'name="manifest"' not in page and 'name="name"' not in page
    assert "_save" not in page  # no Save button: nothing to change
    response = root_client.post(RUN_ADMIN + "change/", {"name": "renamed"})
    assert response.status_code == 403
    assert Run.objects.get(id=factory.RUN_ID).name == "dashboard-fixture"


def test_a_running_runs_name_stays_editable_but_not_its_manifest(root_client, imported_run):
    make_running(imported_run)
    page = root_client.get(RUN_ADMIN + "change/").content.decode()
    assert 'name="name"' in page and 'name="manifest"' not in page
    assert 'name="audit_report"' not in page and 'name="started_at_0"' not in page


def test_trials_of_a_completed_run_cannot_be_edited_or_deleted(root_client, imported_run):
    trial = Trial.objects.filter(run=imported_run).first()
    url = f"/admin/boxbench/trial/{trial.id}/"
    page = root_client.get(url + "change/").content.decode()
    assert 'name="outcome"' not in page and "_save" not in page
    assert root_client.post(url + "change/", {"outcome": "excluded"}).status_code == 403
    assert root_client.post(url + "delete/", {"post": "yes"}).status_code == 403
    assert Trial.objects.filter(id=trial.id, outcome="success").exists()


def test_measurement_names_and_evidence_of_a_completed_run_are_read_only(root_client, imported_run):
    trial = Trial.objects.filter(run=imported_run).first()
    evidence = Evidence.objects.create(trial=trial, kind="readiness", data={"attempts": 2})
    name = MeasurementName.objects.filter(run=imported_run).first()
    for model, obj in (("measurementname", name), ("evidence", evidence)):
        url = f"/admin/boxbench/{model}/{obj.pk}/"
        assert root_client.post(url + "delete/", {"post": "yes"}).status_code == 403
        assert root_client.post(url + "change/", {}).status_code == 403
    changelist = root_client.get("/admin/boxbench/trial/").content.decode()
    assert "delete_selected" not in changelist  # no bulk deletion of trials


def test_transitions_are_never_edited_in_the_admin(root_client, imported_run, rf):
    from django.contrib import admin

    from boxbench.admin import RunTransitionInline

    make_running(imported_run)
    page = root_client.get(RUN_ADMIN + "change/").content.decode()
    assert 'name="transitions-INITIAL_FORMS" value="1"' in page  # shown...
    assert 'name="transitions-0-note"' not in page  # ...read-only
    request = rf.get("/")
    request.user = User.objects.get(username="root")
    inline = RunTransitionInline(Run, admin.site)
    assert not inline.has_add_permission(request, imported_run)
    assert not inline.has_change_permission(request, imported_run)
    assert not inline.has_delete_permission(request, imported_run)


def test_deleting_a_whole_run_asks_first_then_is_recorded(root_client, imported_run, caplog):
    confirm = root_client.get(RUN_ADMIN + "delete/").content.decode()
    assert "Are you sure" in confirm and "Trials: 281" in confirm
    with caplog.at_level(logging.WARNING, logger="boxbench.admin"):
        response = root_client.post(RUN_ADMIN + "delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Run.objects.filter(id=factory.RUN_ID).exists()
    assert not Trial.objects.exists()
    entry = LogEntry.objects.get(action_flag=DELETION)
    assert (entry.object_id, entry.object_repr, entry.user.username) == (
        factory.RUN_ID,
        "dashboard-fixture",
        "root",
    )
    assert f"run {factory.RUN_ID} (dashboard-fixture) deleted by root" in caplog.text
    assert "281 trials" in caplog.text


def test_deleting_a_published_run_takes_it_off_the_leaderboards(root_client, published_run):
    assert Aggregate.objects.exists()
    root_client.post(RUN_ADMIN + "delete/", {"post": "yes"})
    assert not Aggregate.objects.exists()
    assert b"No published results yet" in root_client.get("/").content


def test_staff_without_the_delete_permission_cannot_delete_a_run(client, imported_run):
    client.force_login(User.objects.create_user("staff", password="pw-staff-1", is_staff=True))
    assert client.post(RUN_ADMIN + "delete/", {"post": "yes"}).status_code == 403
    assert Run.objects.filter(id=factory.RUN_ID).exists()
