"""The rooms' import rules (docs/architecture.md): the runner reaches boxbench only through its
models and, in runner/store.py, the stored-definition checks; stats/ imports no Django."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def imports_by_file(room: str, prefix: str) -> dict[str, set[str]]:
    found = {}
    for path in sorted((ROOT / room).rglob("*.py")):
        names = {
            name
            for name in imported_modules(path)
            if name == prefix or name.startswith(prefix + ".")
        }
        if names:
            found[str(path.relative_to(ROOT))] = names
    return found


def test_the_runner_imports_of_boxbench_only_its_models_and_in_the_store_the_definition_checks():
    beyond_models = {
        path: names - {"boxbench.models"}
        for path, names in imports_by_file("runner", "boxbench").items()
        if names - {"boxbench.models"}
    }
    assert beyond_models == {"runner/store.py": {"boxbench.definitions"}}


def test_stats_imports_no_django():
    assert imports_by_file("stats", "django") == {}
