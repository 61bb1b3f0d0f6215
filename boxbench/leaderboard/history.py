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
from boxbench.leaderboard.sources import job_host_series, run_floor
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
    series_list, compared = [], []
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
        if len(runs) >= 2:
            compared.append((series, provider, runs[-2], runs[-1]))
    # Only the two runs each series compares are read again: their trials, not every earlier
    # run's.
    cells = _compared_cells(board, [(p, r) for _, p, *two in compared for r in two])
    pending = []
    for series, provider, earlier, later in compared:
        values = {r.id: _values(cells[provider.id, r.id], units, method) for r in (earlier, later)}
        floors = [run_floor(benchmark, r, declared) for r in (earlier, later)]
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


def _compared_cells(board: Board, wanted: list[tuple[Provider, Run]]) -> dict:
    """{(provider id, run id): {unit id: cell}} of each (provider, run) wanted: from the board
    where the board shows that run, else loaded, one query for each provider's run at a time."""
    out: dict = {}
    rest: dict = {}
    for provider, run in wanted:
        if board.runs.get(provider.slug) == run:
            out[provider.id, run.id] = {
                u: c for (u, p), c in board.cells.items() if p == provider.id
            }
        else:
            rest.setdefault((provider.id, run.id), run)
    while rest:
        group: dict[int, Run] = {}
        for (provider_id, _), run in rest.items():
            group.setdefault(provider_id, run)
        trials, measurements = load_trials(board.benchmark, group)
        grouped = group_cells(board.benchmark, trials, measurements, [])
        for provider_id, run in group.items():
            out[provider_id, run.id] = {u: c for (u, p), c in grouped.items() if p == provider_id}
            del rest[provider_id, run.id]
    return out


def _values(cells: dict, units: dict, method) -> dict:
    """{unit slug: successful values} of one run of one provider."""
    values = {}
    for unit_id, slug in units.items():
        samples = cells.get(unit_id, EMPTY_CELL).samples
        values[slug] = (
            np.concatenate(samples.calls)
            if method.statistic == summary.POOLED and samples.calls
            else samples.values
        )
    return values
