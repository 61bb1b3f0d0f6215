"""A run in progress: its page shows progress per provider and benchmark with the time left,
refreshes it from progress.json, and offers a Cancel button to those allowed to cancel."""

import re

import pytest
from django.contrib.auth.models import Permission, User

from boxbench import live
from boxbench.models import Run, RunStatus, RunTransition
from tests.web import factory

pytestmark = pytest.mark.django_db
RUN_URL = f"/runs/{factory.RUN_ID}/"


def test_it_estimates_the_time_left_from_the_pace_of_finished_trials():
    assert live.time_left(600.0, 200, 100) == pytest.approx(300.0)
    assert live.time_left(600.0, 0, 100) is None  # nothing finished: no pace yet
    assert live.time_left(600.0, 200, 0) == 0.0
    assert live.duration_text(300.0) == "about 5 min"
    assert live.duration_text(20.0) == "under a minute"
    assert live.duration_text(3900.0) == "about 1 h 05 min"
    assert live.duration_text(None) == ""


def test_it_returns_progress_per_provider_and_benchmark_as_json(staff_client, running_run):
    response = staff_client.get(RUN_URL + "progress.json")
    assert response.status_code == 200 and response["Cache-Control"].startswith("max-age=0")
    data = response.json()
    assert data["active"] and data["status"] == "running"
    assert data["remaining"] == 60 and data["finished"] == 281 - 60
    cpu_boat = next(c for c in data["cells"] if (c["provider"], c["benchmark"]) == ("boat", "cpu"))
    assert (cpu_boat["done"], cpu_boat["target"], cpu_boat["queued"]) == (0, 20, 20)
    # 221 finished in 10 minutes: 60 more take about 163 s.
    assert data["seconds_left"] == pytest.approx(600 / 221 * 60, rel=0.02)
    assert data["time_left"] == "about 3 min"
    assert any(c.get("refusal", "").startswith("R401") for c in data["cells"])


def test_it_hides_an_unpublished_runs_progress_from_visitors(client, running_run):
    assert client.get(RUN_URL + "progress.json").status_code == 404


def test_the_run_page_shows_live_progress_and_polls_while_the_run_goes(staff_client, running_run):
    page = staff_client.get(RUN_URL).content.decode()
    assert 'id="live-progress"' in page and 'data-active="true"' in page
    assert re.search(r"/static/boxbench/run\.[0-9a-f]{12}\.js", page)
    assert "Time left: <b>about 3 min</b>" in page
    assert "<td>boat</td><td>cpu</td><td>0 / 20</td>" in page
    assert 'class="badge badge-live"' in page


def test_staff_cancel_a_running_run_with_a_csrf_checked_post(running_run):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    staff = User.objects.create_user("staff", is_staff=True)
    staff.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_unpublished_run", "cancel_run"])
    )
    client.force_login(staff)
    page = client.get(RUN_URL).content.decode()
    assert 'id="cancel-run"' in page
    assert client.post(RUN_URL + "cancel/").status_code == 403  # no CSRF token
    token = client.cookies["csrftoken"].value
    response = client.post(RUN_URL + "cancel/", {"csrfmiddlewaretoken": token}, follow=True)
    assert response.status_code == 200
    run = Run.objects.get(id=factory.RUN_ID)
    assert run.status == RunStatus.CANCELLED  # nothing was running: cancelled at once
    assert RunTransition.objects.filter(run=run, to_status="cancelling").get().actor.username == (
        "staff"
    )
    assert "dashboard-fixture: cancelled" in response.content.decode()
    assert not run.trials.filter(state="queued").exists()


def test_a_non_staff_user_cannot_cancel(outsider_client, running_run):
    assert outsider_client.post(RUN_URL + "cancel/").status_code == 404
    assert Run.objects.get(id=factory.RUN_ID).status == RunStatus.RUNNING


def test_staff_without_the_cancel_permission_see_no_button_and_cannot_cancel(
    staff_client, running_run
):
    assert 'id="cancel-run"' not in staff_client.get(RUN_URL).content.decode()
    assert staff_client.post(RUN_URL + "cancel/").status_code == 403
    assert Run.objects.get(id=factory.RUN_ID).status == RunStatus.RUNNING


def test_cancel_is_a_post(staff_client, running_run):
    assert staff_client.get(RUN_URL + "cancel/").status_code == 405


def test_a_completed_run_with_every_trial_successful_is_green(staff_client, imported_run):
    imported_run.trials.exclude(outcome="success").delete()
    page = staff_client.get(RUN_URL).content.decode()
    assert '<span class="badge badge-ok" id="run-badge">Completed</span>' in page
    assert "badge-bad" not in page and "live-progress" in page
    assert "/static/boxbench/run." not in page  # nothing left to poll


def test_a_completed_run_with_failed_trials_is_amber_not_red(staff_client, imported_run):
    page = staff_client.get(RUN_URL).content.decode()
    assert '<span class="badge badge-warn" id="run-badge">Completed, 1 failed trial</span>' in page


def test_only_a_failed_run_is_red(imported_run):
    Run.objects.filter(id=imported_run.id).update(status=RunStatus.FAILED)
    imported_run.refresh_from_db()
    assert live.badge(imported_run, 0)["css"] == "badge-bad"
