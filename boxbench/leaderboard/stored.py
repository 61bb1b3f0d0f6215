"""What each publication computes of a published run once, and every later publication reads
back instead of recomputing it from the run's trials: the run's pairs (when each was measured),
their history points, and the run's progress cells. A run's trials do not change once it is
published, so the cost of a publication does not grow with the number of runs before it
(docs/performance.md, "Publication independent of history")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from django.db import transaction
from django.db.models import Max

from boxbench.leaderboard.cells import EMPTY_CELL, group_cells, load_trials
from boxbench.models import (
    Benchmark,
    Direction,
    Provider,
    PublishedPair,
    Run,
    RunProgress,
    Trial,
    TrialState,
    Unit,
    UnsuccessfulCount,
)
from runner import runs
from stats import summary


class Board(Protocol):
    """What the points read of a benchmark's board (boxbench.leaderboard.boards.Board, which
    reads the sources, which read the stored pairs: so named by its shape, not imported)."""

    benchmark: Benchmark
    runs: dict[str, Run]
    units: list[Any]


def store_pairs(published: list[Run]) -> None:
    """Record the pairs of every published run not recorded yet (at a publication, the new
    run's): the finished trials' pairs with their latest end, and the pairs whose attempts an
    imported file gives only as counts; and the run's progress cells."""
    known = set(
        PublishedPair.objects.filter(run_id__in=[r.id for r in published])
        .values_list("run_id", flat=True)
        .distinct()
    )
    missing = {run.id: run for run in published if run.id not in known}
    if not missing:
        return
    finished = (
        Trial.objects.filter(run_id__in=missing, state=TrialState.DONE)
        .values_list("run_id", "provider_id", "benchmark_id")
        .order_by()  # the model's ordering would join GROUP BY and make every row a group
        .annotate(measured=Max("ended_at"))
    )
    rows = {
        (run_id, provider_id, benchmark_id): PublishedPair(
            run_id=run_id,
            provider_id=provider_id,
            benchmark_id=benchmark_id,
            measured=measured,
            finished=True,
        )
        for run_id, provider_id, benchmark_id, measured in finished
    }
    counted = (
        UnsuccessfulCount.objects.filter(run_id__in=missing)
        .values_list("run_id", "provider_id", "benchmark_id")
        .distinct()
        .order_by()
    )
    for key in counted:
        rows.setdefault(
            key,
            PublishedPair(run_id=key[0], provider_id=key[1], benchmark_id=key[2], finished=False),
        )
    progress = [RunProgress(run=run, cells=runs.progress(run)) for run in missing.values()]
    with transaction.atomic():
        # A concurrent publication may record the same run: its rows are the same.
        PublishedPair.objects.bulk_create(rows.values(), batch_size=500, ignore_conflicts=True)
        RunProgress.objects.bulk_create(progress, ignore_conflicts=True)


def published_pairs(published: list[Run]) -> list[tuple]:
    """(run id, provider id, benchmark id, measured, finished) of every pair of the runs."""
    return list(
        PublishedPair.objects.filter(run_id__in=[r.id for r in published]).values_list(
            "run_id", "provider_id", "benchmark_id", "measured", "finished"
        )
    )


def finished_pairs(benchmark_id: int, published: list[Run], shown: set) -> list[tuple]:
    """(run id, provider id) of the benchmark's finished pairs in the published runs but those
    in `shown`."""
    return list(
        PublishedPair.objects.filter(
            benchmark_id=benchmark_id, run_id__in=[r.id for r in published], finished=True
        )
        .exclude(run_id__in=shown)
        .values_list("run_id", "provider_id")
    )


def progress_of(published: list[Run]) -> dict:
    """{run id: its progress cells}, as store_pairs counted them."""
    return dict(
        RunProgress.objects.filter(run_id__in=[r.id for r in published]).values_list(
            "run_id", "cells"
        )
    )


def store_points(boards: list[Board], published: list[Run], providers: dict[int, Provider]):
    """Compute and store the history points of every finished pair that has none yet (at a
    publication, the new run's): from the board's rows where the board shows that run for the
    provider, else summarized from the run's own trials."""
    by_id = {run.id: run for run in published}
    pending: dict[tuple, list[int]] = {}
    for run_id, provider_id, benchmark_id in PublishedPair.objects.filter(
        run_id__in=by_id, finished=True, points__isnull=True
    ).values_list("run_id", "provider_id", "benchmark_id"):
        pending.setdefault((run_id, benchmark_id), []).append(provider_id)
    boards_by_id = {board.benchmark.id: board for board in boards}
    # History is charted for timed boards only: a pair of any other benchmark waits until its
    # benchmark has one.
    pending = {key: ids for key, ids in pending.items() if key[1] in boards_by_id}
    if not pending:
        return
    benchmarks = {b.id: b for b in Benchmark.objects.filter(id__in={b for _, b in pending})}
    with transaction.atomic():
        for (run_id, benchmark_id), provider_ids in sorted(pending.items(), key=str):
            benchmark, run = benchmarks[benchmark_id], by_id[run_id]
            found = _run_points(boards_by_id[benchmark_id], benchmark, run, provider_ids, providers)
            for provider_id, points in found.items():
                PublishedPair.objects.filter(
                    run_id=run_id, provider_id=provider_id, benchmark_id=benchmark_id
                ).update(points=points)


def units_of(benchmark: Benchmark) -> dict[int, str]:
    """{unit id: slug} in the store's order, the order of a run's points."""
    return {u.id: u.slug for u in Unit.objects.filter(benchmark=benchmark)}


def method_of(benchmark: Benchmark) -> summary.Method:
    return summary.Method(
        benchmark.direction != Direction.HIGHER, benchmark.statistic, benchmark.unit
    )


def _run_points(
    board: Board,
    benchmark: Benchmark,
    run: Run,
    provider_ids: list[int],
    providers: dict[int, Provider],
) -> dict[int, list[dict]]:
    units = units_of(benchmark)
    out, load = {}, {}
    for pid in provider_ids:
        slug = providers[pid].slug
        if board.runs.get(slug) == run:
            rows = {
                page["unit"]: next((r for r in page["rows"] if r["provider"] == slug), None)
                for page in board.units
            }
            out[pid] = _points({u: rows.get(u) for u in units.values()})
        else:
            load[pid] = run
    if load:
        method = method_of(benchmark)
        trials, measurements = load_trials(benchmark, load)
        grouped = group_cells(benchmark, trials, measurements, [])
        for pid in load:
            out[pid] = _points(
                {
                    slug: summary.center(grouped.get((uid, pid), EMPTY_CELL).samples, method)
                    for uid, slug in units.items()
                }
            )
    return out


def _points(rows: Mapping[str, Mapping[str, Any] | None]) -> list[dict]:
    return [
        {
            "unit": unit,
            "n": row["n"],
            "median": row["median"],
            "ci_low": row["ci_low"],
            "ci_high": row["ci_high"],
        }
        for unit, row in rows.items()
        if row and row["n"]
    ]
