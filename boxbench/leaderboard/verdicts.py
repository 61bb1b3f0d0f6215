"""The compare verdict between adjacent ranks, on every unit of a board and on the overview's lead
sentences: read from the comparisons computed once per publication (comparisons.py, with
stats.compare's bootstrap ratio and detectable difference), never per request.

Where two adjacent providers show no detectable difference the lower one's rank is marked "≈":
the ranks follow the methodology, the mark says the sample cannot tell them apart.
"""

from __future__ import annotations

from boxbench.leaderboard import shapes, withheld
from boxbench.leaderboard.boards import Board
from stats import compare

SAME = "≈"
NOT_RECORDED = "not recorded"


def adjacent_verdicts(
    rows: list, comparison_rows: dict[tuple, shapes.CompareRow], benchmark: str, unit: str
) -> list[shapes.AdjacentVerdict]:
    """For each ranked row after the first (in rank order), the verdict against the row ranked
    just above it on the unit's main metric."""
    ranked = sorted((r for r in rows if r["rank"] is not None), key=lambda r: r["rank"])
    # Read before the pages' shape check (materialize): a malformed row must reach that check.
    names = {r["provider"]: r.get("provider_name", r["provider"]) for r in ranked}
    found: list[shapes.AdjacentVerdict] = []
    for upper, lower in zip(ranked, ranked[1:], strict=False):
        row = comparison_rows.get((upper["provider"], lower["provider"], benchmark, unit))
        if row is None:
            continue
        same = row["verdict"] in (compare.NO_DIFFERENCE, compare.NOT_COMPARABLE)
        found.append(
            {
                "upper": upper["provider"],
                "upper_name": names[upper["provider"]],
                "upper_rank": upper["rank"],
                "lower": lower["provider"],
                "lower_name": names[lower["provider"]],
                "lower_rank": lower["rank"],
                "verdict": row["verdict"],
                "same": same,
                "text": sentence(
                    row["verdict"], row["text"], names[upper["provider"]], names[lower["provider"]]
                ),
            }
        )
    return found


def sentence(verdict: str, text: str, upper: str, lower: str) -> str:
    """The verdict (stats.compare's, and its describe() text) in a reader's words, naming both
    providers."""
    if verdict == compare.NO_DIFFERENCE:
        return f"{upper} {SAME} {lower}: {text}; these trials cannot tell them apart"
    if verdict == compare.NOT_COMPARABLE:
        return f"{upper} and {lower}: {text}"
    return f"{text} than {lower}"


def main_rows(pages: dict[tuple[str, str], shapes.ComparePage]) -> dict[tuple, shapes.CompareRow]:
    """{(a, b, benchmark, unit): the main metric's comparison row} over every ordered pair."""
    return {
        (a, b, row["benchmark"], row["unit"]): row
        for (a, b), page in pages.items()
        for row in page["rows"]
        if not row["stage"]
    }


def add_verdicts(boards: list[Board], pages: dict[tuple[str, str], shapes.ComparePage]) -> None:
    """Give each unit page its adjacent verdicts, and a single-unit board's summary the same."""
    found = main_rows(pages)
    for board in boards:
        slug = board.benchmark.slug
        for unit in board.units:
            unit["verdicts"] = adjacent_verdicts(unit["rows"], found, slug, unit["unit"])
        if not board.summary["multi_unit"] and board.units:
            board.summary["verdicts"] = board.units[0]["verdicts"]


def lead(overview: shapes.OverviewPage, boards: list[Board], all_held: list[Board]) -> shapes.Lead:
    """The overview's opening: one generated sentence per section from its headline benchmark's
    verdicts, what the audit held back, and the publication date, trial count and job host
    behind the board (`all_held`: the boards whose every pair is held back)."""
    by_slug = {board.benchmark.slug: board for board in boards}
    sentences = []
    for headline in overview["headlines"]:
        board = by_slug.get(headline["benchmark"])
        if board is not None:
            sentences.append(f"{headline['section_label']}: {_section_sentence(board)}")
    combined = [by_slug[slug] for slug in overview["benchmarks"] if slug in by_slug]
    series = overview["job_host_series"]
    return {
        "sentences": sentences,
        "held_back": withheld.held_back_sentence(boards + all_held),
        "published_at": max((b.summary["published_at"] for b in combined), default=""),
        "trials": sum(unit["trial_count"] for b in combined for unit in b.units),
        "job_host": _job_host_words(series),
    }


def _job_host_words(series: shapes.JobHostSeries | None) -> str:
    """ "x86_64 machine, 2 CPUs in region eu-west", or what of it was not recorded."""
    kind = series["type"].removeprefix("unnamed ") if series else NOT_RECORDED
    region = series["region"] if series else NOT_RECORDED
    if kind == NOT_RECORDED and region == NOT_RECORDED:
        return NOT_RECORDED
    if region == NOT_RECORDED:
        return f"{kind}, region {region}"
    # The settings' stand-in when the operator names no region, said as the pages say it.
    return f"{kind} (no region set)" if region in ("", "unnamed") else f"{kind} in region {region}"


def _section_sentence(board: Board) -> str:
    title = board.benchmark.title
    if not board.summary["multi_unit"]:
        verdicts = board.summary.get("verdicts", [])
        if not verdicts:
            return f"on {title}, no two providers are ranked yet."
        return f"on {title}, {verdicts[0]['text']}."
    first = [v for unit in board.units for v in unit.get("verdicts", []) if v["upper_rank"] == 1]
    if not first:
        return f"on {title}, no two providers are ranked on a unit yet."
    apart = sum(1 for v in first if not v["same"])
    whole = board.summary.get("workload_verdicts", [])
    same = len(first) - apart
    return (
        f"on {title}, the first two providers differ detectably on {apart} of {len(first)} units"
        + (f"; on {same} these trials cannot tell them apart" if same else "")
        + (f"; on the whole workload, {whole[0]['text']}." if whole else ".")
    )
