"""docs/architecture.md names code in two tables: each methodology rule beside the function that
implements it, and the test seams. Every name in them must still resolve, so a rename or a move
that forgets the docs fails here."""

import importlib
import re
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = re.compile(r"`([a-z_]+(?:\.\w+)+)`")


def table_rows(heading: str) -> list[list[str]]:
    """The body rows of the table under `heading`, each as its cells (header row left out)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[1:]]


def split(dotted: str) -> tuple[types.ModuleType, list[str]]:
    """The longest importable module prefix of `dotted`, and the attribute names after it."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            return importlib.import_module(".".join(parts[:cut])), parts[cut:]
        except ModuleNotFoundError:
            continue
    raise ModuleNotFoundError(f"no module in {dotted!r}")


def resolve(dotted: str) -> object:
    found: object
    found, names = split(dotted)
    for name in names:
        found = getattr(found, name)
    return found


def unresolved(names: list[str]) -> dict[str, str]:
    missing = {}
    for name in names:
        try:
            resolve(name)
        except (ImportError, AttributeError) as error:
            missing[name] = str(error)
    return missing


def test_every_function_the_rule_table_names_resolves():
    cells = [row[2] for row in table_rows("Where each methodology rule lives")]
    names = [name for cell in cells for name in NAME.findall(cell)]
    assert unresolved(names) == {}
    # Every row names at least one function, and the table covers the rules it claims to.
    assert all(NAME.search(cell) for cell in cells)
    assert len(cells) >= 30 and len(names) >= len(cells)


def test_every_listed_test_seam_is_a_module_level_name():
    names = [name for row in table_rows("Test seams") for name in NAME.findall(row[0])]
    assert len(names) >= 10
    assert unresolved(names) == {}
    nested = [name for name in names if len(split(name)[1]) != 1]
    assert nested == []  # a seam is a module global, not an attribute of a class


def test_a_name_that_no_longer_exists_does_not_resolve():
    gone = ["stats.labels.ranking_floor", "runner.rules.refill_stop_reason", "nowhere.at.all"]
    assert sorted(unresolved(gone)) == sorted(gone)
