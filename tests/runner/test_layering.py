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


# The walk from the queue task to a trial's write (docs/architecture.md, "Data flow 2") goes down
# this list: each module may import those below it, never one above (imports inside functions too).
WALK = ["runner.steps", "runner.chain", "runner.runs", "runner.store", "runner.lifecycle"]


def test_the_walk_from_the_queue_task_to_a_trials_write_only_goes_down():
    climbs = {}
    for i, module in enumerate(WALK):
        path = ROOT / (module.replace(".", "/") + ".py")
        above = set(WALK[:i])
        reached = {name for name in imported_modules(path) if name in above}
        reached |= {f"runner.{n}" for n in _from_runner(path) if f"runner.{n}" in above}
        if reached:
            climbs[module] = reached
    assert climbs == {}


def _from_runner(path: Path) -> set[str]:
    """The names of `from runner import a, b` (submodules imported by name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "runner" and node.level == 0
        for alias in node.names
    }
