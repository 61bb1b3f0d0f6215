"""The web tests' fixture run, imported and published once per test process instead of per test.

Importing the fixture run (`bench import`) and then auditing and publishing it costs about a
second; hundreds of web tests start from it. So it is built once into each worker's test
database, inside transactions held open across tests: the import in the outermost, the audit and
publication in a savepoint above it. pytest-django wraps every database test in a transaction of
its own, which then nests inside these as a savepoint; its rollback after the test restores the
board for the next one, whatever the test wrote (Django's `TestCase.setUpTestData` works the same
way). Both SQLite (each worker's database in memory) and PostgreSQL nest savepoints.

Other publications of the run sit beside the plain one, each a savepoint on the import (LEVELS).
Before each database test is wrapped, its level is settled: the board published
(`published_run`, or another publication), imported only (`imported_run`), or no board at all
for a test that asks for neither (it starts from an empty store, as it always did) and for a
test that commits (`transactional_db`, the live server: a server thread or process would not
see data in a transaction it does not share, and the test's flush would empty the board). A
level off the way to it is rolled back; one missing on the way is built again. A worker's tests
run in collection order, and `by_board_level` groups each folder's tests by level so that
rebuilds stay few.
"""

from collections.abc import Callable, Iterable

import pytest
from django.db import connection, transaction

# Each level of the board and the level it is built on.
LEVELS: dict[str, str | None] = {
    "imported": None,
    "published": "imported",
    "cpu_alike": "imported",  # published with docker's CPU trials taking local's values
}

# The fixtures whose tests start from a shared board, and the level each starts from.
BOARD_FIXTURES = {
    "imported_run": "imported",
    "published_run": "published",
    "cpu_alike_run": "cpu_alike",
}

BOARD_KEY = pytest.StashKey["SharedBoard"]()


def path_to(level: str | None) -> tuple[str, ...]:
    """The levels from the bottom of the board up to `level`."""
    path: list[str] = []
    while level is not None:
        path.insert(0, level)
        level = LEVELS[level]
    return tuple(path)


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
    wanted = [level for fixture, level in BOARD_FIXTURES.items() if fixture in names]
    if not wanted:
        return None
    top = max(wanted, key=lambda level: len(path_to(level)))
    if not set(wanted) <= set(path_to(top)):
        raise pytest.UsageError(
            f"{item.nodeid} asks for boards {sorted(wanted)} that no one board holds: "
            "ask for one of them"
        )
    return top


def by_board_level(items: Iterable[pytest.Item]) -> list[pytest.Item]:
    """`items` with each folder's tests ordered by the levels they start from, the empty store
    first (stable within each level), folders in their first-seen order: every worker then
    climbs the levels instead of rebuilding the board at every change of module."""
    folders: dict[str, list[pytest.Item]] = {}
    for item in items:
        folders.setdefault(str(item.path.parent), []).append(item)
    return [
        item
        for members in folders.values()
        for item in sorted(members, key=lambda i: path_to(board_level(i)))
    ]


class SharedBoard:
    """The levels of the board open in this process, each an atomic block left open."""

    def __init__(self, unblock: Callable, builders: dict[str, Callable[[], None]]) -> None:
        self._unblock = unblock
        self._builders = builders
        self._open: list[tuple[str, transaction.Atomic]] = []
        self.builds = dict.fromkeys(LEVELS, 0)

    def holds(self, level: str) -> bool:
        return any(name == level for name, _ in self._open)

    def settle(self, level: str | None) -> None:
        """Roll back the levels off the path to `level` and build those missing on it."""
        path = path_to(level)
        with self._unblock():
            if len(connection.atomic_blocks) != len(self._open):
                raise RuntimeError(
                    f"the shared board holds {len(self._open)} transaction(s) but the connection"
                    f" has {len(connection.atomic_blocks)} open: a test left one open"
                )
            while tuple(name for name, _ in self._open) != path[: len(self._open)]:
                self._roll_back_top()
            for name in path[len(self._open) :]:
                self._build(name)

    def _build(self, level: str) -> None:
        block = transaction.atomic()
        block.__enter__()
        self._open.append((level, block))
        try:
            self._builders[level]()
        except BaseException:
            self._roll_back_top()
            raise
        self.builds[level] += 1

    def _roll_back_top(self) -> None:
        _, block = self._open.pop()
        transaction.set_rollback(True)
        block.__exit__(None, None, None)
