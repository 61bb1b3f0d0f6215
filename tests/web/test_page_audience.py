"""A cached staff page is served from the session's remembered audience, and every change to a
user's permissions, groups or flags takes effect on the next request."""

from itertools import product

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.cache import cache
from django.test import RequestFactory

from boxbench.models import Evidence, Trial
from boxbench.views import audience
from boxbench.views.cache import page_key
from tests.web import factory

pytestmark = pytest.mark.django_db
RUN_URL = f"/runs/{factory.RUN_ID}/"
EVIDENCE = b"Private evidence"


@pytest.fixture
def evidence(published_run):
    trial = Trial.objects.filter(run=published_run).first()
    return Evidence.objects.create(trial=trial, kind="readiness", data={"attempts": 3})


def staff(client, name="reviewer", *codenames):
    user = User.objects.create_user(name, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client.force_login(user)
    return user


def forget_run_page():
    """Drop the run page's entries of every audience, keeping the sessions and the generation."""
    request = RequestFactory().get(RUN_URL)
    readers = [audience.VISITOR] + ["user-" + "".join(f) for f in product("01", repeat=5)]
    cache.delete_many([page_key(request, r, "", ("evidence",)) for r in readers])


def page(client, path=RUN_URL):
    response = client.get(path)
    assert response.status_code == 200
    return response.content


def test_it_serves_a_cached_staff_page_without_reading_the_session_user_or_permissions(
    client, published_run, page_queries
):
    staff(client, "reviewer", "view_private_evidence")
    first = page(client, "/")  # renders, and remembers the audience in the session
    with page_queries() as queries:
        assert page(client, "/") == first
    assert queries == []  # the page and the publication version both come from the cache


def test_a_cached_staff_page_costs_two_cache_reads_and_a_visitors_one(client, published_run):
    # With the database as the shared cache each read is a query of its table: the session,
    # then the generation, the publication version and the page together.
    from django.conf import settings
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def cache_reads():
        page(client, "/")
        with CaptureQueriesContext(connection) as captured:
            page(client, "/")
        table = settings.CACHES["default"]["LOCATION"]
        return [q["sql"] for q in captured.captured_queries if table in q["sql"]]

    if not settings.CACHES["default"]["BACKEND"].endswith("DatabaseCache"):
        pytest.skip("counts the database cache's queries")
    assert len(cache_reads()) == 1
    staff(client, "reviewer", "view_private_evidence")
    assert len(cache_reads()) == 2


def test_it_takes_a_revoked_permission_into_account_on_the_next_request(client, evidence):
    user = staff(client, "reviewer", "view_private_evidence")
    assert EVIDENCE in page(client) and EVIDENCE in page(client)  # rendered, then cached
    user.user_permissions.remove(Permission.objects.get(codename="view_private_evidence"))
    assert EVIDENCE not in page(client)
    user.user_permissions.add(Permission.objects.get(codename="view_private_evidence"))
    assert EVIDENCE in page(client)


def test_it_follows_changes_to_groups_and_their_permissions(client, evidence):
    user = staff(client)
    reviewers = Group.objects.create(name="reviewers")
    assert EVIDENCE not in page(client)
    reviewers.user_set.add(user)
    assert EVIDENCE not in page(client)  # the group grants nothing yet
    reviewers.permissions.add(Permission.objects.get(codename="view_private_evidence"))
    assert EVIDENCE in page(client)
    reviewers.permissions.clear()
    assert EVIDENCE not in page(client)
    reviewers.permissions.add(Permission.objects.get(codename="view_private_evidence"))
    assert EVIDENCE in page(client)
    user.groups.remove(reviewers)
    assert EVIDENCE not in page(client)
    user.groups.add(reviewers)
    assert EVIDENCE in page(client)
    reviewers.delete()
    assert EVIDENCE not in page(client)


def test_it_follows_the_staff_and_active_flags(client, published_run):
    user = staff(client)
    assert b"Admin</a>" in page(client)
    user.is_staff = False
    user.save()
    assert b"Admin</a>" not in page(client)
    user.is_staff = True
    user.save()
    assert b"Admin</a>" in page(client)
    user.is_active = False
    user.save()
    assert b"Admin</a>" not in page(client)  # logged out: served the visitor's page


def test_it_recomputes_a_memo_after_its_age_even_when_a_write_sent_no_signal(
    client, evidence, monkeypatch
):
    user = staff(client, "reviewer", "view_private_evidence")
    assert EVIDENCE in page(client)
    # A queryset delete on the through table sends no m2m_changed, so nothing ends the memo.
    User.user_permissions.through.objects.filter(user=user).delete()
    later = audience.clock() + audience.MAX_AGE_S + 1
    monkeypatch.setattr(audience, "clock", lambda: later)
    assert EVIDENCE not in page(client)


def test_it_never_files_a_page_under_an_outdated_memo(client, evidence):
    # B's memo says "no evidence"; a write that sends no signal then grants B the permission.
    b = staff(client, "b")
    assert EVIDENCE not in page(client)
    permission = Permission.objects.get(codename="view_private_evidence")
    User.user_permissions.through.objects.bulk_create(
        [User.user_permissions.through(user=b, permission=permission)]
    )
    forget_run_page()
    assert EVIDENCE in page(client)  # rendered with B's permissions as they are
    client.logout()
    staff(client, "c")  # the audience B's memo names
    assert EVIDENCE not in page(client)


def test_it_keeps_sessions_and_ends_memos_when_the_cache_is_lost(client, evidence):
    user = staff(client, "reviewer", "view_private_evidence")
    assert EVIDENCE in page(client)
    User.user_permissions.through.objects.filter(user=user).delete()  # no signal
    cache.clear()
    content = page(client)
    assert b"Admin</a>" in content  # still logged in: the session is read back from the database
    assert EVIDENCE not in content  # and the audience recomputed


def test_it_replaces_the_generation_again_once_the_change_is_committed(
    client, published_run, django_capture_on_commit_callbacks
):
    user = staff(client)
    before = audience.current_generation()
    with django_capture_on_commit_callbacks(execute=True):
        user.user_permissions.add(Permission.objects.get(codename="audit_run"))
        during = audience.current_generation()
    assert before != during != audience.current_generation()


def test_it_leaves_memos_alone_when_a_login_only_records_its_time(client, published_run):
    staff(client)
    before = audience.current_generation()
    client.force_login(User.objects.create_user("another", is_staff=True))
    assert audience.current_generation() != before  # creating the user is a change
    settled = audience.current_generation()
    client.force_login(User.objects.get(username="another"))  # saves last_login only
    assert audience.current_generation() == settled


def test_one_staff_members_message_never_reaches_another_through_the_page_cache(
    client, published_run
):
    from django.contrib.messages.storage.cookie import CookieStorage
    from django.http import HttpResponse
    from django.test import Client, RequestFactory

    staff(client, "first")
    page(client, "/")  # the overview is in the cache for this audience
    storage = CookieStorage(RequestFactory().get("/"))
    storage.add(25, "Run 42 audited for first")
    carrier = HttpResponse()
    storage.update(carrier)
    client.cookies[storage.cookie_name] = carrier.cookies[storage.cookie_name].value

    assert b"Run 42 audited for first" in page(client, "/")  # shown once, to its reader
    other = Client()
    staff(other, "second")
    assert b"Run 42 audited for first" not in page(other, "/")
    assert b"Run 42 audited for first" not in page(client, "/")  # and only once
