import contextlib

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from boxbench import holdbacks, publishing
from boxbench.models import AuditResolution, Benchmark, Provider, Run
from tests.web import factory


@pytest.fixture(autouse=True)
def fresh_page_cache():
    """Rendered pages are cached per publication; row ids repeat across rolled-back tests."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def page_queries():
    return _page_queries


@contextlib.contextmanager
def _page_queries():
    """The SQL a request sends, leaving out the page cache's own (when the shared cache is the
    database, a miss reads its table and writes it in a savepoint; Redis sends no SQL at all)."""
    with CaptureQueriesContext(connection) as captured:
        queries = []
        yield queries
    cache_table = settings.CACHES["default"]["LOCATION"]
    for query in captured.captured_queries:
        sql = query["sql"]
        if cache_table not in sql and "SAVEPOINT" not in sql:
            queries.append(sql)


@pytest.fixture
def imported_run(tmp_path, db):
    """The fixture run, imported through `bench import` and not yet published."""
    path = factory.write_run(tmp_path / "run.jsonl")
    call_command("bench", "import", path)
    return Run.objects.get(id=factory.RUN_ID)


def explain_failures(run):
    """Resolve every failing check by explanation: the fixture's Create trials drift by
    design."""
    publishing.run_audit(run)
    for provider, benchmark, check in holdbacks.failing_checks(run.audit_report):
        publishing.apply_resolution(
            AuditResolution(
                run=run,
                provider=Provider.objects.get(slug=provider),
                benchmark=Benchmark.objects.get(slug=benchmark),
                check_name=check,
                kind="explained",
                note="Create slows down over the run by design.",
            )
        )


@pytest.fixture
def published_run(imported_run):
    explain_failures(imported_run)
    return publishing.publish(imported_run)


REVIEWER_PERMISSIONS = ["view_unpublished_run", "view_private_evidence", "audit_run"]


@pytest.fixture
def staff_client(client):
    """A staff member who reviews runs: sees unpublished runs and evidence, resolves audits."""
    user = User.objects.create_user("staff", password="pw-staff-123", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=REVIEWER_PERMISSIONS))
    client.force_login(user)
    return client


@pytest.fixture
def outsider_client(client):
    user = User.objects.create_user("outsider", password="pw-outsider-123")
    client.force_login(user)
    return client


def make_running(run, queued: int = 60, minutes: float = 10.0):
    """Turn the imported run into one still going: its last `queued` trials not yet run, the
    run started `minutes` ago, and the manifest's plan (20 trials per unit) for the targets."""
    from datetime import timedelta

    from django.utils import timezone

    from boxbench.models import RunStatus, Trial, TrialState

    last = Trial.objects.filter(run=run).order_by("-seq").values_list("id", flat=True)[:queued]
    Trial.objects.filter(id__in=list(last)).update(
        state=TrialState.QUEUED, outcome="", owner="", cause="", started_at=None, ended_at=None
    )
    manifest = dict(run.manifest)
    manifest["benchmarks"] = {
        b["slug"]: {"trials_per_unit": 20, "units": [u["slug"] for u in b["units"]]}
        for b in factory.BENCHMARKS
    }
    Run.objects.filter(id=run.id).update(
        status=RunStatus.RUNNING,
        started_at=timezone.now() - timedelta(minutes=minutes),
        ended_at=None,
        manifest=manifest,
    )
    run.refresh_from_db()
    return run


@pytest.fixture
def running_run(imported_run):
    return make_running(imported_run)
