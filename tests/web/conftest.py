import pytest
from django.contrib.auth.models import Permission, User
from django.core.cache import cache
from django.core.management import call_command

from boxbench import publishing
from boxbench.models import AuditResolution, Benchmark, Provider, Run
from tests.web import factory


@pytest.fixture(autouse=True)
def fresh_page_cache():
    """Rendered pages are cached per publication; row ids repeat across rolled-back tests."""
    cache.clear()
    yield
    cache.clear()


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
    for provider, benchmark, check in publishing.failing_checks(run.audit_report):
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
