"""No two modules of boxbench/, runner/ or stats/ import each other, directly or round a circle.

Imports inside functions count: a knot hidden in a function (to dodge a circular import at load
time) still makes a reader of one module read the other to change it.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("boxbench", "runner", "stats")


def module_files(root: Path, rooms: tuple[str, ...]) -> dict[str, Path]:
    found = {}
    for room in rooms:
        for path in sorted((root / room).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def imported_names(module: str, path: Path) -> set[str]:
    """Every name an import statement anywhere in the file reaches, relative ones resolved;
    `from a import b` gives both a and a.b (b may be a submodule)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def import_graph(root: Path, rooms: tuple[str, ...]) -> dict[str, set[str]]:
    """{module: the modules of the rooms it imports}. A module's own package (its __init__) is
    left out: loading a package's submodule runs the package first, whoever imports what."""
    files = module_files(root, rooms)

    def owner(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for module, path in files.items():
        targets = {owner(name) for name in imported_names(module, path)}
        graph[module] = {t for t in targets if t and t != module and not module.startswith(t + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The groups of modules that reach one another (strongly connected, more than one)."""
    reach = {}
    for start in graph:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        reach[start] = seen
    groups = set()
    for module in graph:
        group = frozenset({module} | {m for m in reach[module] if module in reach[m]})
        if len(group) > 1:
            groups.add(group)
    return groups


def test_no_import_cycle_in_boxbench_runner_or_stats():
    found = cycles(import_graph(ROOT, ROOMS))
    assert {" <-> ".join(sorted(c)) for c in found} == set()


def test_it_finds_a_cycle_hidden_in_a_function_and_through_a_relative_import(tmp_path):
    package = tmp_path / "boxbench"
    (package / "inner").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from boxbench.inner import b\n")
    (package / "inner" / "__init__.py").write_text("")
    (package / "inner" / "b.py").write_text("from .. import c\n")
    (package / "c.py").write_text("from boxbench import a\n")
    (package / "d.py").write_text("import boxbench.a\n")  # imports into the circle, not in it
    graph = import_graph(tmp_path, ("boxbench",))
    assert cycles(graph) == {frozenset({"boxbench.a", "boxbench.inner.b", "boxbench.c"})}
