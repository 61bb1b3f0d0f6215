"""/metrics: Prometheus text computed from the database, for staff or the bearer token only."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.db.models import Count
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from boxbench import metrics
from boxbench.models import Run, RunStatus, Trial, TrialState, TrialTally
from runner import store
from runner.manifest import LiveCheck
from runner.plan import plan_run
from runner.results import TrialResult
from tests.support.reliability import parse

pytestmark = pytest.mark.django_db


def plan(trials=4):
    return plan_run(
        "metrics", benchmarks=["create"], providers=["local"], trials=trials, seed=1, concurrency=1
    )


def test_it_renders_help_type_escaped_labels_and_special_numbers():
    family = metrics.Family("boxbench_x", "gauge", 'a "help"\nline')
    family.add(1.5, provider='we"ird\\name\n')
    family.add(float("inf"), provider="b")
    family.add(3.0)
    text = metrics.render([family])
    assert text.splitlines()[:2] == [
        '# HELP boxbench_x a "help"\\nline',
        "# TYPE boxbench_x gauge",
    ]
    assert parse(text) == {
        ("boxbench_x", (("provider", 'we"ird\\name\n'),)): 1.5,
        ("boxbench_x", (("provider", "b"),)): float("inf"),
        ("boxbench_x", ()): 3.0,
    }


def test_it_counts_runs_trials_queue_running_age_sandboxes_and_publishing():
    running_run = plan(trials=4)
    running_run.transition(RunStatus.RUNNING)
    first, second, *_ = running_run.trials.order_by("seq")
    assert store.claim_trial(first.pk, "host-a") and store.claim_trial(second.pk, "host-a")
    Trial.objects.filter(pk=first.pk).update(started_at=timezone.now() - timedelta(minutes=7))
    store.save_result(second.pk, TrialResult(outcome="provider_failure", owner="provider"))
    checks = {
        "before_chain": LiveCheck(others=2, own=0, at="2026-01-01T00:00:00+00:00"),
        "later": LiveCheck(others=1, own=1, at="2026-01-01T00:05:00+00:00"),
        "failed": LiveCheck(error="the API did not answer"),
    }
    store.update_manifest(running_run.pk, lambda m: m.live_sandboxes.__setitem__("local", checks))
    done_run = plan(trials=1)
    published_at = timezone.now() - timedelta(hours=1)
    Run.objects.filter(pk=done_run.pk).update(
        status=RunStatus.COMPLETED, published=True, published_at=published_at
    )
    Trial.objects.filter(run=done_run).update(state=TrialState.DONE, outcome="success")

    m = parse(metrics.render(metrics.collect()))

    assert m[("boxbench_runs", (("status", "running"),))] == 1
    assert m[("boxbench_runs", (("status", "completed"),))] == 1
    assert m[("boxbench_runs", (("status", "completed_unaudited"),))] == 1
    assert m[("boxbench_runs", (("status", "failed"),))] == 0
    in_progress = "boxbench_trials_in_progress_runs"
    assert m[(in_progress, (("outcome", ""), ("provider", "local"), ("state", "queued")))] == 2
    assert m[(in_progress, (("outcome", ""), ("provider", "local"), ("state", "running")))] == 1
    key = (("outcome", "provider_failure"), ("provider", "local"), ("state", "done"))
    assert m[(in_progress, key)] == 1
    finished = "boxbench_trials_finished_total"
    assert m[(finished, (("outcome", "success"), ("provider", "local")))] == 1
    assert m[(finished, (("outcome", "provider_failure"), ("provider", "local")))] == 1
    assert m[("boxbench_queue_depth", (("provider", "local"),))] == 2
    assert m[("boxbench_trials_running", (("provider", "local"),))] == 1
    age = m[("boxbench_oldest_running_trial_age_seconds", (("provider", "local"),))]
    assert 7 * 60 <= age < 8 * 60
    assert m[("boxbench_live_sandboxes", (("owner", "others"), ("provider", "local")))] == 1
    assert m[("boxbench_live_sandboxes", (("owner", "run"), ("provider", "local")))] == 1
    recorded = ("boxbench_live_sandboxes_recorded_timestamp_seconds", (("provider", "local"),))
    assert m[recorded] == 1767225900  # 2026-01-01T00:05:00Z, the newest record
    assert m[("boxbench_last_publish_timestamp_seconds", ())] == pytest.approx(
        published_at.timestamp()
    )


def test_it_reads_the_same_few_queries_however_many_runs_exist():
    def queries():
        with CaptureQueriesContext(connection) as captured:
            metrics.collect()
        return len(captured)

    plan(trials=1)
    few = queries()
    for _ in range(3):
        plan(trials=4).transition(RunStatus.RUNNING)
    assert queries() == few == 8


def test_it_answers_the_view_metrics_permission_and_the_bearer_token_only(client, settings):
    settings.METRICS_TOKEN = "s3cret-token"
    url = reverse("metrics")
    assert client.get(url).status_code == 401
    assert client.get(url, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get(url, headers={"Authorization": "Basic s3cret-token"}).status_code == 401
    scraped = client.get(url, headers={"Authorization": "Bearer s3cret-token"})
    assert scraped.status_code == 200 and scraped["Content-Type"].startswith("text/plain")
    assert "boxbench_queue_depth" in scraped.content.decode()
    client.force_login(User.objects.create_user("outsider", password="pw-outsider-123"))
    assert client.get(url).status_code == 403
    staff = User.objects.create_user("staff", password="pw-staff-123", is_staff=True)
    client.force_login(staff)
    assert client.get(url).status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="view_metrics"))
    assert client.get(url).status_code == 200


def test_it_accepts_no_token_at_all_when_none_is_configured(client, settings):
    settings.METRICS_TOKEN = ""
    response = client.get(reverse("metrics"), headers={"Authorization": "Bearer "})
    assert response.status_code == 401


KEY = ("run", "provider", "state", "outcome")


def tallied():
    return sorted(TrialTally.objects.filter(n__gt=0).values_list(*KEY, "n"))


def counted():
    return sorted(Trial.objects.values_list(*KEY).annotate(n=Count("id")).order_by())


def test_it_keeps_the_tally_equal_to_the_trials_through_every_kind_of_write():
    run = plan(trials=6)
    other = plan(trials=2)
    assert tallied() == counted() and len(counted()) == 2
    first, second, third, *_ = run.trials.order_by("seq")
    assert store.claim_trial(first.pk, "host-a") and store.claim_trial(second.pk, "host-a")
    store.save_result(first.pk, TrialResult(outcome="success", owner=""))
    assert tallied() == counted()
    Trial.objects.filter(pk=second.pk).update(cause="a column the tally ignores")
    store.cancel_queued(run, "cancelled by a test")
    assert tallied() == counted()
    third.delete()
    assert tallied() == counted()
    other.delete()
    assert tallied() == counted() and not TrialTally.objects.filter(run=other.pk).exists()
    m = parse(metrics.render(metrics.collect()))
    assert m[("boxbench_trials_finished_total", (("outcome", "success"), ("provider", "local")))]


def test_it_tallies_writes_that_skip_foreign_key_triggers_on_postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("session_replication_role is PostgreSQL's")
    run = plan(trials=3)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        Trial.objects.filter(run=run).update(state=TrialState.DONE, outcome="success")
        cursor.execute("SET LOCAL session_replication_role = origin")
    assert tallied() == counted()
    assert TrialTally.objects.get(run=run, state="done").n == 3
