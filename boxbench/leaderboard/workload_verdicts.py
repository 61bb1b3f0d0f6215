"""The verdict between adjacent ranks on a multi-unit workload's whole-workload value (the
geometric mean of its unit medians), beside the per-unit verdicts (verdicts.py): computed once
per publication from the board's trials (stats.workload_compare), never per request."""

from __future__ import annotations

from boxbench.leaderboard import shapes
from boxbench.leaderboard.boards import Board
from boxbench.leaderboard.cells import EMPTY_CELL
from boxbench.leaderboard.comparisons import not_comparable
from boxbench.leaderboard.verdicts import sentence
from boxbench.models import Direction, Provider
from stats import compare
from stats.workload_compare import UnitSeries, workload_comparison


def add_workload_verdicts(boards: list[Board], providers: dict[int, Provider]) -> None:
    for board in boards:
        if board.summary["multi_unit"]:
            board.summary["workload_verdicts"] = workload_verdicts(board, providers)


def workload_verdicts(board: Board, providers: dict[int, Provider]) -> list[shapes.AdjacentVerdict]:
    """For each ranked row of the All view after the first, the verdict on the whole workload
    against the row ranked just above it, over the units both completed."""
    by_slug = {p.slug: p for p in providers.values()}
    ranked = sorted((r for r in board.summary["rows"] if r["rank"] is not None), key=_rank)
    lower_is_better = board.benchmark.direction != Direction.HIGHER
    first, second = compare.uniforms()
    found: list[shapes.AdjacentVerdict] = []
    for upper, lower in zip(ranked, ranked[1:], strict=False):
        a, b = by_slug[upper["provider"]], by_slug[lower["provider"]]
        units = []
        for page in board.units:
            values_a = board.cells.get((page["unit_id"], a.id), EMPTY_CELL).samples.values
            values_b = board.cells.get((page["unit_id"], b.id), EMPTY_CELL).samples.values
            if values_a.size and values_b.size:
                draws_a = compare.median_draws(values_a, first)
                draws_b = compare.median_draws(values_b, second)
                units.append(UnitSeries(values_a, values_b, draws_a, draws_b))
        found_comparison = workload_comparison(units, lower_is_better, not_comparable(board, a, b))
        if found_comparison is None:
            continue
        text = compare.describe(found_comparison, a.name, b.name, lower_is_better)
        over = f"over the {len(units)} of {len(board.units)} units both completed"
        found.append(
            {
                "upper": a.slug,
                "upper_name": a.name,
                "upper_rank": _rank(upper),
                "lower": b.slug,
                "lower_name": b.name,
                "lower_rank": _rank(lower),
                "verdict": found_comparison.verdict,
                "same": found_comparison.verdict in (compare.NO_DIFFERENCE, compare.NOT_COMPARABLE),
                "text": f"{sentence(found_comparison.verdict, text, a.name, b.name)} ({over})",
            }
        )
    return found


def _rank(row: shapes.SummaryRow) -> int:
    return row["rank"] or 0
