"""A benchmark's finished trials, loaded and grouped by (unit, provider) for the statistics."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from django.db.models import Q

from boxbench.models import (
    Benchmark,
    MeasurementKind,
    Outcome,
    Run,
    Trial,
    TrialState,
    UnsuccessfulCount,
)
from stats.summary import POOLED, Samples


@dataclass
class Cell:
    """One provider on one unit: what the statistics read."""

    samples: Samples  # the successful trials' values, stages, costs and calls
    outcomes: dict
    failures: int  # unreplaced provider failures


def _empty_cell() -> Cell:
    return Cell(Samples(np.array([])), {}, 0)


EMPTY_CELL = _empty_cell()  # read only: a provider with no trial on a unit


def _cells_q(by_provider: dict[int, Run], prefix: str = "") -> Q:
    """Trials of each provider's chosen run: OR of (run, providers) groups."""
    groups: dict = {}
    for provider_id, run in by_provider.items():
        groups.setdefault(run.id, []).append(provider_id)
    q = Q()
    for run_id, provider_ids in groups.items():
        q |= Q(**{f"{prefix}run_id": run_id, f"{prefix}provider_id__in": provider_ids})
    return q


def load_trials(benchmark: Benchmark, by_provider: dict[int, Run]):
    """The benchmark's finished trials from each provider's run, and the measurements of the
    successes that the statistics read (the main metric, its pooled calls, the stages), one row
    per trial and name."""
    rows = list(
        Trial.objects.filter(_cells_q(by_provider), benchmark=benchmark, state=TrialState.DONE)
        .values_list(
            "id",
            "unit_id",
            "provider_id",
            "outcome",
            "cost_usd",
            "replaces_id",
            "cut_short",
            "metrics",
            "stages",
        )
        # Execution order: the bootstrap draws indices into the values, so their order is part
        # of the published interval (docs/methodology.md).
        .order_by("run_id", "seq")
    )
    trials = pd.DataFrame.from_records(
        [row[:7] for row in rows],
        columns=["trial", "unit", "provider", "outcome", "cost_usd", "replaces", "cut_short"],
    )
    main = benchmark.metric
    calls = f"{main}.call_" if benchmark.statistic == POOLED else None
    metric, stage, success = MeasurementKind.METRIC, MeasurementKind.STAGE, Outcome.SUCCESS
    measured = []
    for trial, _, _, outcome, _, _, _, metrics, stages in rows:
        if outcome != success:
            continue
        for name, value in metrics.items():
            if name == main or (calls and name.startswith(calls)):
                measured.append((trial, metric, name, value))
        measured.extend((trial, stage, name, value) for name, value in stages.items())
    measurements = pd.DataFrame.from_records(measured, columns=["trial", "kind", "name", "value"])
    return trials, measurements


def load_counts(benchmark: Benchmark, by_provider: dict[int, Run]) -> list[tuple]:
    """(unit, provider, outcomes, unreplaced provider failures) of the attempts each provider's
    run knows only as counts (imported from a public raw-data file)."""
    return list(
        UnsuccessfulCount.objects.filter(_cells_q(by_provider), benchmark=benchmark)
        .values_list("unit_id", "provider_id", "outcomes", "unreplaced_provider_failures")
        .order_by("unit_id", "provider_id")
    )


def add_counts(cells: dict[tuple[int, int], Cell], counts: list[tuple]):
    """Add the counted attempts to the cells' outcomes and unreplaced failures, as if their trials
    were stored; a provider known only by counts on a unit gets a cell without samples."""
    for unit, provider, outcomes, unreplaced in counts:
        cell = cells.get((unit, provider))
        if cell is None:
            cell = cells[(unit, provider)] = _empty_cell()
        for outcome, n in outcomes.items():
            cell.outcomes[outcome] = cell.outcomes.get(outcome, 0) + int(n)
        cell.failures += int(unreplaced)


def group_cells(benchmark, trials, measurements, stages) -> dict[tuple[int, int], Cell]:
    """Group the trials by (unit, provider) with their values as numpy arrays.

    Trial ids are UUIDs, slow to hash and group in pandas, so each trial gets its row number
    once and every measurement is placed into a per-trial array by that number.
    """
    size = len(trials)
    position = {trial: i for i, trial in enumerate(trials["trial"])}
    row = np.fromiter(
        (position.get(t, -1) for t in measurements["trial"]),
        dtype=np.int64,
        count=len(measurements),
    )
    kind = measurements["kind"].to_numpy(dtype=object)
    name = measurements["name"].to_numpy(dtype=object)
    value = measurements["value"].to_numpy(dtype=float, na_value=np.nan)
    known = row >= 0

    def per_trial(selected: np.ndarray) -> np.ndarray:
        out = np.full(size, np.nan)
        out[row[selected]] = value[selected]
        return out

    metric = per_trial(known & (kind == MeasurementKind.METRIC) & (name == benchmark.metric))
    is_stage = known & (kind == MeasurementKind.STAGE)
    stage_values = {s: per_trial(is_stage & (name == s)) for s in stages}
    calls: dict[int, np.ndarray] = {}
    if benchmark.statistic == POOLED:
        prefix = f"{benchmark.metric}.call_"
        is_call = known & np.isfinite(value)
        is_call &= np.fromiter((str(n).startswith(prefix) for n in name), bool, len(name))
        order = np.argsort(row[is_call], kind="stable")
        owners, values_sorted = row[is_call][order], value[is_call][order]
        starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]]) if owners.size else []
        for start, stop in zip(starts, [*starts[1:], owners.size], strict=True):
            calls[int(owners[start])] = values_sorted[start:stop]
    outcome = trials["outcome"].to_numpy(dtype=object)
    costs = trials["cost_usd"].to_numpy(dtype=float, na_value=np.nan)
    replaced = set(trials["replaces"].dropna())
    unreplaced = np.fromiter((t not in replaced for t in trials["trial"]), bool, size)
    # A trial cut short is stored as a provider failure of unknown owner; the methodology lists
    # it among the failures that cannot be replaced, so it counts as an unreplaced failure.
    keys = trials[["unit", "provider"]].assign(
        success=(outcome == Outcome.SUCCESS) & np.isfinite(metric),
        failure=(outcome == Outcome.PROVIDER_FAILURE) & unreplaced,
    )
    succeeded = keys["success"].to_numpy()
    cells: dict[tuple[int, int], Cell] = {}
    for key, rows in keys.groupby(["unit", "provider"], sort=False).indices.items():
        rows = rows[succeeded[rows]]
        trial_calls = []
        if benchmark.statistic == POOLED:
            # A trial without recorded calls counts as one call: its own value.
            trial_calls = [calls.get(int(r), metric[r : r + 1]) for r in rows]
        samples = Samples(
            values=metric[rows],
            stages={s: stage_values[s][rows] for s in stages},
            costs=costs[rows],
            calls=trial_calls,
        )
        cells[(int(key[0]), int(key[1]))] = Cell(
            samples=samples,
            outcomes={},
            failures=0,
        )
    outcomes = trials.groupby(["unit", "provider", "outcome"]).size()
    for (unit, provider, result), count in outcomes.items():
        cells[(int(unit), int(provider))].outcomes[str(result)] = int(count)
    failures = keys[keys["failure"]].groupby(["unit", "provider"]).size()
    for (unit, provider), count in failures.items():
        cells[(int(unit), int(provider))].failures = int(count)
    return cells
