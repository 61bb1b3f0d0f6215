"""docs/architecture.md maps each methodology rule to the function that implements it; every name
in that table must still resolve, so a rename or a move that forgets the table fails here."""

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADING = "## Where each methodology rule lives"


def rule_table_rows() -> list[str]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]


def resolve(dotted: str) -> object:
    """Import the longest module prefix of `dotted`, then walk the rest as attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            found = getattr(found, name)
        return found
    raise ModuleNotFoundError(f"no module in {dotted!r}")


def test_every_function_the_rule_table_names_resolves():
    rows = rule_table_rows()[1:]  # the header row names no function
    cells = [row.split("|")[3] for row in rows]
    names = [name for cell in cells for name in re.findall(r"`([a-z_]+(?:\.\w+)+)`", cell)]
    missing = {}
    for name in names:
        try:
            resolve(name)
        except (ImportError, AttributeError) as error:
            missing[name] = str(error)
    assert missing == {}
    # Every row names at least one function, and the table covers the rules it claims to.
    assert all(re.search(r"`\w+\.", cell) for cell in cells)
    assert len(rows) >= 30 and len(names) >= len(rows)


def test_a_name_that_no_longer_exists_does_not_resolve():
    for gone in ("stats.labels.ranking_floor", "runner.rules.refill_stop_reason", "nowhere.at.all"):
        try:
            resolve(gone)
        except (ImportError, AttributeError):
            continue
        raise AssertionError(f"{gone} resolved")
