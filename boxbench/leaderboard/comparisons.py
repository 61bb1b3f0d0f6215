"""Every pair of published providers compared, benchmark by benchmark, unit by unit and stage by
stage (stats.compare), built from the boards' trials when a run is published.

A pair is computed once, in the order of its slugs (the first slug takes the first uniforms of
the seeded bootstrap, stats.compare); its other order is the same comparison flipped, so
/compare/?a=x&b=y and ?a=y&b=x show the same verdicts with the ratio inverted.
"""

from __future__ import annotations

import itertools

import numpy as np

from boxbench.leaderboard import shapes
from boxbench.leaderboard.boards import Board
from boxbench.leaderboard.cells import EMPTY_CELL, Cell
from boxbench.leaderboard.sources import job_host_series
from boxbench.leaderboard.states import provider_info
from boxbench.models import Direction, Provider
from stats import compare
from stats.summary import POOLED


def compare_pages(
    boards: list[Board], providers: dict[int, Provider]
) -> dict[tuple[str, str], shapes.ComparePage]:
    """{(slug a, slug b): page} for every ordered pair of providers with published numbers."""
    shown = sorted({slug for board in boards for slug in board.runs})
    by_slug = {p.slug: p for p in providers.values()}
    draws = _Draws()
    pages: dict[tuple[str, str], shapes.ComparePage] = {}
    for first, second in itertools.combinations(shown, 2):
        a, b = by_slug[first], by_slug[second]
        found = [
            (row, comparison, caveats_b_first)
            for board in boards
            for row, comparison, caveats_b_first in _board_rows(board, a, b, draws)
        ]
        pages[(first, second)] = _page(a, b, [(r, c) for r, c, _ in found])
        pages[(second, first)] = _page(
            b, a, [(_flip(r, caveats), c.flipped()) for r, c, caveats in found]
        )
    return pages


class _Draws:
    """Each provider's resampled medians per (board, unit, series, which uniforms), drawn once."""

    def __init__(self):
        self.found: dict[tuple, np.ndarray] = {}

    def get(self, key: tuple, values: np.ndarray, calls: list | None, second: bool):
        key = (*key, second)
        if key not in self.found:
            if calls is not None:
                self.found[key] = compare.pooled_draws(calls, second)
            else:
                self.found[key] = compare.median_draws(values, compare.uniforms()[int(second)])
        return self.found[key]


def _board_rows(board: Board, a: Provider, b: Provider, draws: _Draws):
    """(row, comparison, the row's caveats in b-first order) for each unit and series of the
    board both providers published."""
    benchmark = board.benchmark
    lower = benchmark.direction != Direction.HIGHER
    pooled = benchmark.statistic == POOLED
    for page in board.units:
        rows = {r["provider"]: r for r in page["rows"]}
        row_a, row_b = rows.get(a.slug), rows.get(b.slug)
        if not (row_a and row_b and row_a["n"] and row_b["n"]):
            continue
        cell_a = board.cells.get((page["unit_id"], a.id), EMPTY_CELL)
        cell_b = board.cells.get((page["unit_id"], b.id), EMPTY_CELL)
        reason = not_comparable(board, a, b)
        caveats, flipped_caveats = _caveats(a, b, row_a, row_b), _caveats(b, a, row_b, row_a)
        for stage in ["", *page["stages"]]:
            values_a, values_b = _series(cell_a, stage, pooled), _series(cell_b, stage, pooled)
            if not (values_a.size and values_b.size):
                continue
            calls = pooled and not stage
            key = (benchmark.id, page["unit_id"], stage)
            drawn_a = draws.get(
                (*key, a.id), values_a, cell_a.samples.calls if calls else None, False
            )
            drawn_b = draws.get(
                (*key, b.id), values_b, cell_b.samples.calls if calls else None, True
            )
            comparison = compare.compare(values_a, values_b, drawn_a, drawn_b, lower, reason)
            yield (
                {
                    "benchmark": benchmark.slug,
                    "benchmark_title": benchmark.title,
                    "unit": page["unit"],
                    "unit_title": page["unit_title"],
                    "stage": stage,
                    "measure_unit": "ms" if stage else benchmark.unit,
                    "lower_is_better": True if stage else lower,
                    "run_a": row_a.get("run", ""),
                    "run_b": row_b.get("run", ""),
                    "caveats": caveats,
                },
                comparison,
                flipped_caveats,
            )


def _series(cell: Cell, stage: str, pooled: bool) -> np.ndarray:
    """The values one series compares: the main metric (pooled calls under the pooled
    statistic) or a stage's recorded values."""
    if stage:
        values = cell.samples.stages.get(stage)
        return values[np.isfinite(values)] if values is not None else np.array([])
    if pooled and cell.samples.calls:
        return np.concatenate(cell.samples.calls)
    return cell.samples.values


def not_comparable(board: Board, a: Provider, b: Provider) -> str:
    """Why a's and b's numbers on this unit may not be set side by side, as the methodology
    forbids combining them; "" when they may."""
    reasons = []
    size = (board.benchmark.cpus, board.benchmark.memory_mib)
    for p in (a, b):
        sizes = (p.declaration or {}).get("machine_sizes")
        if sizes and not any((s.get("cpus"), s.get("memory_mib")) == size for s in sizes):
            reasons.append(
                f"different machine size ({p.name} declares no {size[0]} CPU / {size[1]} MiB)"
            )
    hosts = [job_host_series(board.runs[p.slug], p.slug) for p in (a, b)]
    if hosts[0] != hosts[1]:
        reasons.append("timed from job hosts of another type or region")
    return "; ".join(reasons)


def _caveats(a: Provider, b: Provider, row_a: dict, row_b: dict) -> list[str]:
    """What a reader should know beside the verdict: every board sets these two side by side,
    so these are stated, not refused. An image digest starts a results series of one provider
    over time; it does not forbid comparing two providers at one time."""
    caveats = [
        f"{p.name} is {row['label'] or 'not ranked'} here"
        for p, row in ((a, row_a), (b, row_b))
        if not row["ranked"]
    ]
    if row_a.get("image_digest") != row_b.get("image_digest"):
        caveats.append(
            f"different images ({a.name} {_short(row_a.get('image_digest'))}, "
            f"{b.name} {_short(row_b.get('image_digest'))})"
        )
    if row_a["region_marker"] != row_b["region_marker"]:
        where = [f"{p.name}: {p.region_marker or 'near the job host'}" for p in (a, b)]
        caveats.append(f"timed across different distances ({', '.join(where)})")
    return caveats


def _short(digest: str | None) -> str:
    if not digest:
        return "none recorded"
    return digest.split(":", 1)[-1][:12]


def _flip(row: dict, caveats: list[str]) -> dict:
    return {**row, "run_a": row["run_b"], "run_b": row["run_a"], "caveats": caveats}


def _page(a: Provider, b: Provider, found: list) -> shapes.ComparePage:
    rows: list[shapes.CompareRow] = []
    for row, c in found:
        text = compare.describe(c, a.name, b.name, row["lower_is_better"])
        rows.append({**row, **c.to_dict(), "text": text})  # type: ignore[typeddict-item]
    return {
        "a": provider_info(a),
        "b": provider_info(b),
        "summary": compare.summary([r["verdict"] for r in rows], a.name, b.name),  # type: ignore[typeddict-item]
        "rows": rows,
    }
