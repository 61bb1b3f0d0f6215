"""What one address of a comparison shows: every benchmark's verdict counts, and the rows of a
bounded number of its units, so an answer stays small however many units a benchmark has.

The materialized page (comparisons.py) holds every row; the load test's synthetic DeepSWE has
250 units, each with its stages, which made one answer over a megabyte. The first address shows
each benchmark's first UNITS_SHOWN units (boxbench's own DeepSWE set fits whole); a benchmark's
own address (?benchmark=) shows all of its units, UNITS_PER_PAGE at a time. The CSV download
keeps every row. Pure: no Django.
"""

from __future__ import annotations

from boxbench.leaderboard.shapes import CompareBenchmark, ComparePage, CompareRow, CompareSlice

UNITS_SHOWN = 12
UNITS_PER_PAGE = 50
VERDICTS = ("a", "b", "none", "not_comparable")


class NotInComparison(LookupError):
    """The address names a benchmark or a page the comparison does not have."""


def _units_by_benchmark(rows: list[CompareRow]) -> dict[str, dict[str, list[CompareRow]]]:
    """{benchmark: {unit: rows}}, both in the materialized page's order."""
    grouped: dict[str, dict[str, list[CompareRow]]] = {}
    for row in rows:
        grouped.setdefault(row["benchmark"], {}).setdefault(row["unit"], []).append(row)
    return grouped


def _pages(units: int) -> int:
    return max(1, -(-units // UNITS_PER_PAGE))


def cut(page: ComparePage, benchmark: str = "", number: int = 1) -> CompareSlice:
    """The part of `page` one address shows: with no benchmark, the first UNITS_SHOWN units of
    each; with one, page `number` of its units."""
    grouped = _units_by_benchmark(page["rows"])
    if benchmark and benchmark not in grouped:
        raise NotInComparison(f"the two providers have no benchmark {benchmark!r} in common")
    if not benchmark and number != 1:
        raise NotInComparison("pages are a benchmark's: name it with ?benchmark=")
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
                raise NotInComparison(f"{slug} has {pages} page(s) of units, not {number}")
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
