"""What one address shows of a materialized page that grows with a benchmark's units, so an
answer stays small however many units a benchmark has (the load test's synthetic DeepSWE has 250,
which made a whole comparison over a megabyte, and a whole history of 100 runs several).

A comparison (comparisons.py) shows every benchmark's verdict counts and the rows of each one's
first UNITS_SHOWN units (boxbench's own DeepSWE set fits whole); a benchmark's own address
(?benchmark=) shows all of its units, UNITS_PER_PAGE at a time. The CSV download keeps every row.
A benchmark's history (history.py) is answered one unit at a time, as its page charts it. The
overview (pages.py) carries every unit of every benchmark (its tree's leaves, each benchmark's
units and their rows): the API answers it OVERVIEW_UNITS_PER_PAGE units at a time, in the tree's
order, with everything above the units (scores, sections, benchmarks) on every page. Pure:
no Django.
"""

from __future__ import annotations

from boxbench.leaderboard.shapes import (
    CompareBenchmark,
    ComparePage,
    CompareRow,
    CompareSlice,
    HistoryPage,
    HistorySlice,
    OverviewBenchmark,
    OverviewPage,
    ScoreNode,
    Series,
)

UNITS_SHOWN = 12
UNITS_PER_PAGE = 25
OVERVIEW_UNITS_PER_PAGE = 50
VERDICTS = ("a", "b", "none", "not_comparable")


class NotOnPage(LookupError):
    """The address names a benchmark, unit or page the materialized page does not have."""


def _units_by_benchmark(rows: list[CompareRow]) -> dict[str, dict[str, list[CompareRow]]]:
    """{benchmark: {unit: rows}}, both in the materialized page's order."""
    grouped: dict[str, dict[str, list[CompareRow]]] = {}
    for row in rows:
        grouped.setdefault(row["benchmark"], {}).setdefault(row["unit"], []).append(row)
    return grouped


def _pages(units: int) -> int:
    return max(1, -(-units // UNITS_PER_PAGE))


def cut_comparison(page: ComparePage, benchmark: str = "", number: int = 1) -> CompareSlice:
    """The part of `page` one address shows: with no benchmark, the first UNITS_SHOWN units of
    each; with one, page `number` of its units."""
    grouped = _units_by_benchmark(page["rows"])
    if benchmark and benchmark not in grouped:
        raise NotOnPage(f"the two providers have no benchmark {benchmark!r} in common")
    if not benchmark and number != 1:
        raise NotOnPage("pages are a benchmark's: name it with ?benchmark=")
    summaries: list[CompareBenchmark] = []
    rows: list[CompareRow] = []
    pages = 1
    for slug, units in grouped.items():
        names = list(units)
        if not benchmark:
            shown = names[:UNITS_SHOWN]
        elif slug == benchmark:
            pages = _pages(len(names))
            if number > pages:
                raise NotOnPage(f"{slug} has {pages} page(s) of units, not {number}")
            shown = names[(number - 1) * UNITS_PER_PAGE : number * UNITS_PER_PAGE]
        else:
            shown = []
        every = [row for unit_rows in units.values() for row in unit_rows]
        summaries.append(
            {
                "benchmark": slug,
                "benchmark_title": every[0]["benchmark_title"],
                "units": len(names),
                "counts": {v: sum(r["verdict"] == v for r in every) for v in VERDICTS},
                "units_shown": len(shown),
            }
        )
        rows += [row for unit in shown for row in units[unit]]
    return {
        "a": page["a"],
        "b": page["b"],
        "summary": page["summary"],
        "benchmarks": summaries,
        "benchmark": benchmark,
        "page": number,
        "pages": pages,
        "rows": rows,
    }


def cut_history(page: HistoryPage, unit: str = "") -> HistorySlice:
    """Every series of `page` with the points and changes of one unit (by default the first
    unit any series has a point on), and the units there are."""
    units = list(dict.fromkeys(p["unit"] for s in page["series"] for p in s["points"]))
    chosen = unit or (units[0] if units else "")
    if unit and unit not in units:
        raise NotOnPage(f"{page['benchmark']} has no history on a unit {unit!r}")
    series: list[Series] = [
        {
            **s,
            "points": [p for p in s["points"] if p["unit"] == chosen],
            "changes": [c for c in s["changes"] if c["unit"] == chosen],
        }
        for s in page["series"]
    ]
    return {
        "benchmark": page["benchmark"],
        "title": page["title"],
        "measure_unit": page["measure_unit"],
        "lower_is_better": page["lower_is_better"],
        "series": series,
        "unit": chosen,
        "units": units,
    }


def _tree_units(node: ScoreNode, out: dict[tuple[str, str], None]) -> None:
    for child in node["children"]:
        if child["level"] == "unit":
            out[(node["key"], child["key"])] = None
        else:
            _tree_units(child, out)


def overview_units(page: OverviewPage) -> list[tuple[str, str]]:
    """Every (benchmark, unit) of the score tree once, in its order (a benchmark can sit under
    two sections, its units then under both)."""
    found: dict[tuple[str, str], None] = {}
    _tree_units(page["tree"], found)
    return list(found)


def _prune(node: ScoreNode, shown: set[tuple[str, str]]) -> ScoreNode:
    children = [
        child
        for child in node["children"]
        if child["level"] != "unit" or (node["key"], child["key"]) in shown
    ]
    return {**node, "children": [_prune(child, shown) for child in children]}


def cut_overview(page: OverviewPage, number: int = 1) -> tuple[OverviewPage, int]:
    """Page `number` of the overview's units, and how many pages there are: the tree keeps the
    unit leaves of this page, each benchmark the units (titles and rows) of this page."""
    units = overview_units(page)
    pages = max(1, -(-len(units) // OVERVIEW_UNITS_PER_PAGE))
    if number > pages:
        raise NotOnPage(f"the overview has {pages} page(s) of units, not {number}")
    start = (number - 1) * OVERVIEW_UNITS_PER_PAGE
    shown = set(units[start : start + OVERVIEW_UNITS_PER_PAGE])
    benchmarks: dict[str, OverviewBenchmark] = {}
    for slug, benchmark in page["benchmarks"].items():
        cut: OverviewBenchmark = {
            **benchmark,
            "units": {u: t for u, t in benchmark["units"].items() if (slug, u) in shown},
        }
        if "results" in benchmark:
            results = benchmark["results"]
            kept = {u: rows for u, rows in results["units"].items() if (slug, u) in shown}
            cut["results"] = {**results, "units": kept}
        benchmarks[slug] = cut
    return {**page, "tree": _prune(page["tree"], shown), "benchmarks": benchmarks}, pages
