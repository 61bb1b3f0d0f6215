"""Each benchmark's results series and their history, and the changes between a series' newest
run and the one before it (stats.changes), materialized at publication.

A results series is the set of published runs of one (provider, benchmark version) with the same
image digest and job-host type and region (the machine size is the benchmark version's). Runs of
different series are never compared; a new image digest starts a new series.
"""

from __future__ import annotations

import math

import numpy as np

from boxbench.leaderboard import shapes
from boxbench.leaderboard.boards import Board
from boxbench.leaderboard.cells import EMPTY_CELL, group_cells, load_trials
from boxbench.leaderboard.sources import job_host_series, ranking_floor
from boxbench.models import Provider, Run, Trial, TrialState, Unit
from stats import changes, summary


def history_pages(
    boards: list[Board], published: list[Run], held: dict, providers: dict[int, Provider]
) -> dict[str, shapes.HistoryPage]:
    """{benchmark slug: its history page}, every change of the publication corrected together."""
    pages, found = {}, []
    for board in boards:
        page, pending = _board_history(board, published, held, providers)
        pages[board.benchmark.slug] = page
        found += pending
    flagged = changes.flag([c for c, _, _ in found], [lower for _, lower, _ in found])
    for (_, _, where), result in zip(found, flagged, strict=True):
        series, earlier, later, unit, title = where
        p = result["p"]
        series["changes"].append(
            {
                "unit": unit,
                "earlier_run": str(earlier.id),
                "earlier_run_name": earlier.name,
                "later_run": str(later.id),
                "later_run_name": later.name,
                "n_earlier": result["n_earlier"],
                "n_later": result["n_later"],
                "median_earlier": result["median_earlier"],
                "median_later": result["median_later"],
                "percent": None if math.isnan(result["percent"]) else result["percent"],
                "p": None if math.isnan(p) else p,
                "q": result["q"],
                "flagged": result["flagged"],
                "direction": result["direction"],
                "text": changes.describe(result, title, earlier.name)
                if result["q"] is not None
                else "",
            }
        )
    return pages


def _board_history(board: Board, published: list[Run], held: dict, providers):
    benchmark = board.benchmark
    by_id = {run.id: run for run in published}
    held_pairs = {
        run_id: {(pair["provider"], pair["benchmark"]) for pair in pairs}
        for run_id, pairs in held.items()
    }
    cells = (
        Trial.objects.filter(benchmark=benchmark, run_id__in=by_id, state=TrialState.DONE)
        .values_list("run_id", "provider_id")
        .distinct()
        .order_by()
    )
    grouped: dict[tuple, list[Run]] = {}
    for run_id, provider_id in cells:
        run, slug = by_id[run_id], providers[provider_id].slug
        if (slug, benchmark.slug) in held_pairs.get(run_id, ()):
            continue
        key = (
            provider_id,
            run.typed_manifest.digest_for(benchmark.slug, [slug]) or "",
            *job_host_series(run, slug),
        )
        grouped.setdefault(key, []).append(run)
    units = {u.id: u.slug for u in Unit.objects.filter(benchmark=benchmark)}
    declared = len(units)
    method = summary.Method(benchmark.direction != "higher", benchmark.statistic, benchmark.unit)
    series_list, pending = [], []
    for (provider_id, digest, kind, region), runs in sorted(
        grouped.items(), key=lambda item: (providers[item[0][0]].slug, item[0][1:])
    ):
        provider = providers[provider_id]
        runs.sort(key=lambda r: (r.published_at, str(r.id)))
        values = {run.id: _values(board, provider, run, units, method) for run in runs}
        series: shapes.Series = {
            "provider": provider.slug,
            "provider_name": provider.name,
            "colour_index": provider.pk - 1,
            "image_digest": digest,
            "job_host_type": kind,
            "job_host_region": region,
            "points": [point for run in runs for point in values[run.id][1]],
            "changes": [],
        }
        if not series["points"]:
            continue  # no successful trial in any run: nothing to draw or compare
        series_list.append(series)
        if len(runs) < 2:
            continue
        earlier, later = runs[-2], runs[-1]
        floors = [ranking_floor(benchmark, r, declared) for r in (earlier, later)]
        totals = [sum(v.size for v in values[r.id][0].values()) for r in (earlier, later)]
        if totals[0] < floors[0] or totals[1] < floors[1]:
            continue  # no verdict below the ranking floor
        for unit, before in values[earlier.id][0].items():
            after = values[later.id][0].get(unit)
            if before.size and after is not None and after.size:
                where = (series, earlier, later, unit, f"{benchmark.title} {unit}")
                pending.append((changes.change(before, after), method.lower_is_better, where))
    page: shapes.HistoryPage = {
        "benchmark": benchmark.slug,
        "title": benchmark.title,
        "measure_unit": benchmark.unit,
        "lower_is_better": method.lower_is_better,
        "series": series_list,
    }
    return page, pending


def _values(board: Board, provider: Provider, run: Run, units: dict, method):
    """({unit slug: successful values}, [history points]) of one run of one provider: from the
    board where the board shows this run, else loaded and summarized."""
    if board.runs.get(provider.slug) == run:
        cells = {u: board.cells.get((u, provider.id), EMPTY_CELL) for u in units}
        rows = {
            p["unit"]: next((r for r in p["rows"] if r["provider"] == provider.slug), None)
            for p in board.units
        }
    else:
        trials, measurements = load_trials(board.benchmark, {provider.id: run})
        grouped = group_cells(board.benchmark, trials, measurements, [])
        cells = {u: grouped.get((u, provider.id), EMPTY_CELL) for u in units}
        rows = {units[u]: summary.center(c.samples, method) for u, c in cells.items()}
    values, points = {}, []
    for unit_id, cell in cells.items():
        unit = units[unit_id]
        samples = cell.samples
        values[unit] = (
            np.concatenate(samples.calls)
            if method.statistic == summary.POOLED and samples.calls
            else samples.values
        )
        row = rows.get(unit)
        if row and row["n"]:
            points.append(
                {
                    "run": str(run.id),
                    "run_name": run.name,
                    "published_at": run.published_at.isoformat(),
                    "unit": unit,
                    "n": row["n"],
                    "median": row["median"],
                    "ci_low": row["ci_low"],
                    "ci_high": row["ci_high"],
                }
            )
    return values, points
