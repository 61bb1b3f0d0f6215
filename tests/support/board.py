"""The web tests' fixture run, imported and published once per test process instead of per test.

Importing the fixture run (`bench import`) and then auditing and publishing it costs about a
second; hundreds of web tests start from it. So it is built once into each worker's test
database, inside transactions held open across tests: the import in the outermost, the audit and
publication in a savepoint above it. pytest-django wraps every database test in a transaction of
its own, which then nests inside these as a savepoint; its rollback after the test restores the
board for the next one, whatever the test wrote (Django's `TestCase.setUpTestData` works the same
way). Both SQLite (each worker's database in memory) and PostgreSQL nest savepoints.

Before each database test is wrapped, its level is settled: the board published
(`published_run`), imported only (`imported_run`), or no board at all for a test that asks for
neither (it starts from an empty store, as it always did) and for a test that commits
(`transactional_db`, the live server: a server thread or process would not see data in a
transaction it does not share, and the test's flush would empty the board). A level that is not
held is rolled back; one that is missing is built again. A worker's tests run in collection order,
and `by_board_level` groups each folder's tests by level so that rebuilds stay few.
"""

from collections.abc import Callable, Iterable

import pytest
from django.db import connection, transaction

LEVELS = ("imported", "published")

# The fixtures whose tests start from a shared board, highest level first.
BOARD_FIXTURES = {"published_run": "published", "imported_run": "imported"}

BOARD_KEY = pytest.StashKey["SharedBoard"]()


def commits(item: pytest.Item) -> bool:
    """Whether the test runs outside a rolled-back transaction (pytest-django's rule)."""
    marker = item.get_closest_marker("django_db")
    if marker is not None and (
        marker.kwargs.get("transaction") or marker.kwargs.get("reset_sequences")
    ):
        return True
    names = set(getattr(item, "fixturenames", ()))
    return bool(names & {"transactional_db", "live_server", "django_db_reset_sequences"})


def board_level(item: pytest.Item) -> str | None:
    """The level of the shared board `item` starts from, or None for an empty store."""
    if commits(item):
        return None
    names = set(getattr(item, "fixturenames", ()))
    for fixture, level in BOARD_FIXTURES.items():
        if fixture in names:
            return level
    return None


def by_board_level(items: Iterable[pytest.Item]) -> list[pytest.Item]:
    """`items` with each folder's tests ordered empty store, imported, published (stable within
    each), folders in their first-seen order: every worker then climbs the levels instead of
    rebuilding the board at every change of module."""
    order = {None: 0, "imported": 1, "published": 2}
    folders: dict[str, list[pytest.Item]] = {}
    for item in items:
        folders.setdefault(str(item.path.parent), []).append(item)
    return [
        item
        for members in folders.values()
        for item in sorted(members, key=lambda i: order[board_level(i)])
    ]


class SharedBoard:
    """The levels of the board open in this process, each an atomic block left open."""

    def __init__(self, unblock: Callable, builders: dict[str, Callable[[], None]]) -> None:
        self._unblock = unblock
        self._builders = builders
        self._open: list[transaction.Atomic] = []
        self.builds = {level: 0 for level in LEVELS}

    def holds(self, level: str) -> bool:
        return len(self._open) > LEVELS.index(level)

    def settle(self, level: str | None) -> None:
        """Roll back the levels above `level` and build those missing up to it."""
        depth = 0 if level is None else LEVELS.index(level) + 1
        with self._unblock():
            if len(connection.atomic_blocks) != len(self._open):
                raise RuntimeError(
                    f"the shared board holds {len(self._open)} transaction(s) but the connection"
                    f" has {len(connection.atomic_blocks)} open: a test left one open"
                )
            while len(self._open) > depth:
                self._roll_back_top()
            while len(self._open) < depth:
                self._build(LEVELS[len(self._open)])

    def _build(self, level: str) -> None:
        block = transaction.atomic()
        block.__enter__()
        self._open.append(block)
        try:
            self._builders[level]()
        except BaseException:
            self._roll_back_top()
            raise
        self.builds[level] += 1

    def _roll_back_top(self) -> None:
        block = self._open.pop()
        transaction.set_rollback(True)
        block.__exit__(None, None, None)
