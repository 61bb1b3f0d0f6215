"""Suite-wide test settings and the fixtures several folders share.

`./boxbench.sh test` runs the whole suite on SQLite, then again on PostgreSQL. Tests that never
touch the database gain nothing from the second pass, so with BOXBENCH_DATABASE_TESTS_ONLY=1 only
tests that use the database are collected, and of those neither the browser tests nor the tests
of the Podman-backed providers. The browser tests check how Chromium draws pages whose content the
non-browser web tests check on PostgreSQL too, and the database cannot change a layout. The Podman
tests (docker, OpenSandbox) test a sandbox backend and use the store only as every run does
(planning, claims, results), which tests/runner's store tests check on PostgreSQL; they ran one
after another on one worker, with their own Podman and OpenSandbox servers. Together they were
most of the second pass's longest worker.

Both passes run on several pytest-xdist workers (`-n 3 --dist loadgroup`). Each worker has its
own database (in memory on SQLite, `test_<name>_gw<N>` on PostgreSQL: subprocesses a test starts
are given that name, tests/reliability/conftest.py) and its own tmp_path tree; what a worker would
otherwise start once per worker and share with nobody, it shares with its group instead: every
test that needs the Podman service runs on one worker (one service, one check of the standard
image, no two imports of it at once), and the browser tests on one worker (one Chromium).
"""

import os
import secrets

# Servers the tests start (gunicorn) refuse the development SECRET_KEY with DEBUG off, as a
# deployment must: they inherit a random key of their own.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(48))

import pytest

from runner import adapters, chain
from runner.declarations import get_declaration
from runner.providers.local import LocalProvider
from tests.support import static
from tests.support.board import BOARD_KEY, board_level, by_board_level
from tests.support.runner import FAST, SkippedTime

# The Podman service and the `docker` provider, for every folder that needs them.
pytest_plugins = ["tests.support.podman"]

DATABASE_FIXTURES = {"db", "transactional_db", "live_server"}


def uses_database(item) -> bool:
    if item.get_closest_marker("django_db"):
        return True
    return bool(DATABASE_FIXTURES.intersection(getattr(item, "fixturenames", ())))


def second_pass(item) -> bool:
    """Whether the PostgreSQL pass runs this test (the module's docstring says why)."""
    if item.get_closest_marker("browser") or item.get_closest_marker("podman"):
        return False
    podman = WORKER_GROUPS["podman"] in getattr(item, "fixturenames", ())
    return uses_database(item) and not podman


# The xdist worker group of a test with this marker or session/module fixture.
WORKER_GROUPS = {"podman": "podman_socket", "browser": "browser"}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        for name, fixture in WORKER_GROUPS.items():
            if item.get_closest_marker(name) or fixture in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(name))
                break
    items[:] = by_board_level(items)
    if os.environ.get("BOXBENCH_DATABASE_TESTS_ONLY") != "1":
        return
    kept = [item for item in items if second_pass(item)]
    deselected = [item for item in items if not second_pass(item)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    """Settle the shared board (tests/support/board.py) at the level a database test starts
    from, just before pytest-django wraps the test in its own transaction."""
    board = request.config.stash.get(BOARD_KEY, None)
    if fixturedef.argname == "_django_db_helper" and board is not None:
        board.settle(board_level(request.node))
    return (yield)


@pytest.fixture(scope="session", autouse=True)
def collected_static():
    """Static files as `collectstatic` leaves them, for this process and the servers it starts
    (pages name them by the content hash its manifest records)."""
    from django.test.utils import override_settings

    root = static.collected()
    os.environ["STATIC_ROOT"] = str(root)
    with override_settings(STATIC_ROOT=root):
        yield root


@pytest.fixture(scope="session")
def live_server(request):
    """pytest-django's live server, serving static files through whitenoise as a deployment
    does: Django's test server would look the hashed names up in the source folders and 404."""
    from pytest_django.live_server_helper import LiveServer

    server = LiveServer(os.getenv("DJANGO_LIVE_TEST_SERVER_ADDRESS") or "localhost", start=False)
    server.thread.static_handler = lambda application: application
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session", autouse=True)
def quick_password_hashing():
    """Users made by the tests hash their passwords with MD5, as Django advises for tests: the
    deployed PBKDF2 (a million rounds) costs half a second per user on an idle core and two at
    a load of 9, and the web tests sign in hundreds of users. No test is about the hash; a
    server a test starts in its own process keeps the deployed hashers (no test signs in there)."""
    from django.test.utils import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture
def local(tmp_path):
    """The real local provider, with its sandboxes under this test's own directory."""
    provider = LocalProvider(get_declaration("local"), {"root": tmp_path / "sandboxes"})
    yield provider
    for sandbox in provider.list_sandboxes():
        provider.destroy(sandbox)
    for snapshot in provider.list_snapshots():
        provider.delete_snapshot(snapshot.id)


@pytest.fixture(autouse=True)
def small_density_cap():
    """Density creates up to BOXBENCH_DENSITY_CAP (32) sandboxes, each with its readiness
    check and confirmed deletion: the tests that run every sandbox operation through a provider
    check the procedure, which 3 show as well as 32 (tests/workloads/test_density.py sets its own).
    Against a cloud fake's simulated delays, 32 cost minutes per provider."""
    from django.test.utils import override_settings

    # An override of its own, not pytest-django's `settings`: that fixture, once set up here
    # before every other, would restore what a test changed through it (CACHES, say) only
    # after the other fixtures' teardowns had run against the test's settings.
    with override_settings(DENSITY_CAP=3):
        yield


@pytest.fixture
def skipped_time():
    return SkippedTime()


@pytest.fixture
def sync_queue(monkeypatch):
    """Queued tasks (the audit a finished run enqueues) run at once, in the caller."""
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", True)  # read once at import; the settings fixture is too late


@pytest.fixture
def chain_provider(local, monkeypatch, settings):
    """Make runs use `local` (or what the setter is given, a wrapped one say) with short
    lifecycle limits; returns a setter. The job host counts as large, so tests not about the
    shared-host cap (test_schedule.py) plan the parallel trials they ask for."""
    settings.RUNNER_JOB_HOST_CPUS = 256
    current = {"provider": local}
    monkeypatch.setattr(adapters, "provider_factory", lambda slug: current["provider"])
    monkeypatch.setattr(chain, "lifecycle_limits", FAST)

    def use(provider):
        current["provider"] = provider
        return provider

    return use


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's, and then, before the PostgreSQL test database is dropped, the sessions
    other threads or child processes left on it are ended (one was a recovery sweep's
    `lost_steps` query): otherwise the drop fails with "being accessed by other users", a warning
    of pytest-django's and so an error. Only sessions that set the database up pay for it."""
    yield
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
