import contextlib
import os
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from boxbench import publishing
from boxbench.models import Run
from tests.support.board import BOARD_KEY, SharedBoard
from tests.support.web import (
    CHROMIUM,
    CHROMIUM_ARGS,
    CSP_LISTENER,
    docker_cpu_like_local,
    explain_failures,
    make_running,
)
from tests.web import factory


@pytest.fixture(autouse=True)
def fresh_page_cache():
    """Rendered pages are cached per publication; row ids repeat across rolled-back tests."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def own_raw_exports(settings, tmp_path):
    """Each test's published raw downloads in files of its own (boxbench/views/raw_files.py)."""
    settings.RAW_EXPORT_DIR = tmp_path / "raw-exports"


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


def import_fixture_run(folder: Path) -> Run:
    path = factory.write_run(folder / "run.jsonl")
    call_command("bench", "import", path)
    return Run.objects.get(id=factory.RUN_ID)


def publish_fixture_run(run: Run) -> Run:
    explain_failures(run)
    return publishing.publish(run)


def publish_cpu_alike(run: Run) -> Run:
    docker_cpu_like_local(run)
    return publish_fixture_run(run)


@pytest.fixture(scope="session")
def shared_board(request, django_db_setup, django_db_blocker, tmp_path_factory):
    """The fixture run imported and published once per worker (tests/support/board.py)."""
    folder = tmp_path_factory.mktemp("shared-board")
    board = SharedBoard(
        django_db_blocker.unblock,
        {
            "imported": lambda: import_fixture_run(folder),
            "published": lambda: publish_fixture_run(Run.objects.get(id=factory.RUN_ID)),
            "cpu_alike": lambda: publish_cpu_alike(Run.objects.get(id=factory.RUN_ID)),
        },
    )
    request.config.stash[BOARD_KEY] = board
    yield board
    del request.config.stash[BOARD_KEY]
    board.settle(None)


@pytest.fixture
def imported_run(shared_board, tmp_path, db):
    """The fixture run, imported through `bench import` and not yet published: the worker's
    shared one, a fresh instance per test, or (a test that commits) one of the test's own."""
    if shared_board.holds("imported"):
        return Run.objects.get(id=factory.RUN_ID)
    return import_fixture_run(tmp_path)


@pytest.fixture
def published_run(shared_board, imported_run):
    if shared_board.holds("published"):
        return imported_run
    return publish_fixture_run(imported_run)


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


@pytest.fixture
def running_run(imported_run):
    return make_running(imported_run)


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed at /usr/bin/chromium")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls are
    # still synchronous.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.errors = []
    tab.on("console", lambda m: m.type == "error" and tab.errors.append(m.text))
    tab.on("pageerror", lambda e: tab.errors.append(str(e)))
    # Every Content-Security-Policy violation (a blocked inline script, style or source),
    # recorded in the page as it happens: the dashboard must draw with the policy on.
    tab.add_init_script(CSP_LISTENER)
    yield tab
    context.close()


@pytest.fixture
def cpu_alike_run(shared_board, imported_run):
    """The fixture run published with docker's CPU trials taking local's values in reverse
    order: the same distribution, so no difference may be claimed between them."""
    if shared_board.holds("cpu_alike"):
        return imported_run
    return publish_cpu_alike(imported_run)
