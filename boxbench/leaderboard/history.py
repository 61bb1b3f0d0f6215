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
from boxbench.leaderboard.stored import method_of, units_of
from boxbench.models import Provider, PublishedPair, Run
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
    stored = PublishedPair.objects.filter(
        benchmark=benchmark, run_id__in=by_id, finished=True
    ).values_list("run_id", "provider_id", "points")
    grouped: dict[tuple, list[Run]] = {}
    points_of: dict[tuple, list[dict]] = {}
    for run_id, provider_id, points in stored:
        run, slug = by_id[run_id], providers[provider_id].slug
        if (slug, benchmark.slug) in held_pairs.get(run_id, ()):
            continue
        key = (
            provider_id,
            run.typed_manifest.digest_for(benchmark.slug, [slug]) or "",
            *job_host_series(run, slug),
        )
        grouped.setdefault(key, []).append(run)
        points_of[run_id, provider_id] = points or []
    units = units_of(benchmark)
    declared = len(units)
    method = method_of(benchmark)
    series_list, pending = [], []
    for (provider_id, digest, kind, region), runs in sorted(
        grouped.items(), key=lambda item: (providers[item[0][0]].slug, item[0][1:])
    ):
        provider = providers[provider_id]
        runs.sort(key=lambda r: (r.published_at, str(r.id)))
        series: shapes.Series = {
            "provider": provider.slug,
            "provider_name": provider.name,
            "colour_index": provider.pk - 1,
            "image_digest": digest,
            "job_host_type": kind,
            "job_host_region": region,
            "points": [
                {
                    "run": str(run.id),
                    "run_name": run.name,
                    "published_at": run.published_at.isoformat(),
                    **point,
                }
                for run in runs
                for point in points_of[run.id, provider_id]
            ],
            "changes": [],
        }
        if not series["points"]:
            continue  # no successful trial in any run: nothing to draw or compare
        series_list.append(series)
        if len(runs) < 2:
            continue
        # Only the two runs compared are read again: their trials, not every earlier run's.
        earlier, later = runs[-2], runs[-1]
        values = {r.id: _values(board, provider, r, units, method) for r in (earlier, later)}
        floors = [ranking_floor(benchmark, r, declared) for r in (earlier, later)]
        totals = [sum(v.size for v in values[r.id].values()) for r in (earlier, later)]
        if totals[0] < floors[0] or totals[1] < floors[1]:
            continue  # no verdict below the ranking floor
        for unit, before in values[earlier.id].items():
            after = values[later.id].get(unit)
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
    """{unit slug: successful values} of one run of one provider: from the board where the
    board shows this run, else loaded from the run's trials."""
    if board.runs.get(provider.slug) == run:
        cells = {u: board.cells.get((u, provider.id), EMPTY_CELL) for u in units}
    else:
        trials, measurements = load_trials(board.benchmark, {provider.id: run})
        grouped = group_cells(board.benchmark, trials, measurements, [])
        cells = {u: grouped.get((u, provider.id), EMPTY_CELL) for u in units}
    values = {}
    for unit_id, cell in cells.items():
        samples = cell.samples
        values[units[unit_id]] = (
            np.concatenate(samples.calls)
            if method.statistic == summary.POOLED and samples.calls
            else samples.values
        )
    return values
