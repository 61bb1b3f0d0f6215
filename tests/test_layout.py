"""Two layout rules: the module ceilings, and the test tree's one import rule.

`boxbench/` modules stay at or under 450 lines and `runner/` modules under 800 (CONTRIBUTING.md;
migrations are generated, so they do not count): a module that reaches its ceiling is split along
its seams before it grows further, not trimmed to fit.

No module under tests/ imports a test module or a conftest. A helper that two test modules share
lives in tests/support/ (or a helper module beside its users), a shared fixture in a conftest.py;
importing a test module instead runs its tests' module-level code twice and, for a fixture, hides
which one pytest uses.
"""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
CEILINGS = {"boxbench": 450, "runner": 800}


def over_ceiling(root: Path, ceilings: dict[str, int]) -> list[str]:
    """`room/path.py: N lines (ceiling C)` for every module of a room longer than its ceiling."""
    found = []
    for room, ceiling in ceilings.items():
        for path in sorted((root / room).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > ceiling:
                found.append(f"{path.relative_to(root)}: {lines} lines (ceiling {ceiling})")
    return found


def test_no_module_is_longer_than_its_rooms_ceiling():
    assert over_ceiling(ROOT, CEILINGS) == []


def test_the_ceiling_check_names_a_long_module_and_leaves_migrations_alone(tmp_path):
    (tmp_path / "runner" / "providers").mkdir(parents=True)
    (tmp_path / "runner" / "providers" / "long.py").write_text("x = 1\n" * 801)
    (tmp_path / "runner" / "at_ceiling.py").write_text("x = 1\n" * 800)
    (tmp_path / "boxbench" / "migrations").mkdir(parents=True)
    (tmp_path / "boxbench" / "migrations" / "0001_initial.py").write_text("x = 1\n" * 900)
    (tmp_path / "boxbench" / "views.py").write_text("x = 1\n" * 451)
    assert over_ceiling(tmp_path, CEILINGS) == [
        "boxbench/views.py: 451 lines (ceiling 450)",
        "runner/providers/long.py: 801 lines (ceiling 800)",
    ]


def imported_modules(path: Path) -> list[tuple[int, list[str]]]:
    """(line, the dotted names it may import) of every import statement in `path`, those inside
    functions included: `from a.b import c` may import the module a.b or a.b.c."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, [alias.name]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            found.append((node.lineno, [node.module, *names]))
    return found


def is_test_module(dotted: str) -> bool:
    parts = dotted.split(".")
    return parts[0] == "tests" and any(
        part == "conftest" or part.startswith("test_") for part in parts[1:]
    )


def cross_imports(root: Path) -> list[str]:
    problems = []
    for path in sorted(root.rglob("*.py")):
        for line, names in imported_modules(path):
            wrong = next((name for name in names if is_test_module(name)), None)
            if wrong:
                problems.append(f"{path.relative_to(root.parent)}:{line} imports {wrong}")
    return problems


def test_no_module_under_tests_imports_a_test_module_or_a_conftest():
    assert cross_imports(TESTS) == []


def test_the_check_finds_a_test_module_imported_inside_a_function(tmp_path):
    tests = tmp_path / "tests"
    (tests / "web").mkdir(parents=True)
    (tests / "web" / "test_a.py").write_text(
        "def test_x():\n    from tests.web.test_b import helper\n"
    )
    (tests / "web" / "test_c.py").write_text("from tests.web import conftest\n")
    (tests / "web" / "test_d.py").write_text("from tests.support.web import figure\n")
    assert cross_imports(tests) == [
        "tests/web/test_a.py:2 imports tests.web.test_b",
        "tests/web/test_c.py:1 imports tests.web.conftest",
    ]
