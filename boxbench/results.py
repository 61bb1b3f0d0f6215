"""Published results: the audit, publishing, and the aggregates the dashboard reads.

Publishing materializes every number a page shows (medians, intervals, tails, stage bars, derived
views, workload values, scores, ranks, labels) into Aggregate rows, so requests never recompute
statistics. The data flows ORM -> pandas -> stats -> Aggregate rows.

Which runs feed the leaderboards: for each benchmark and provider, the latest published run that
holds finished trials of that provider on it. Every aggregate names the run (and image digest) each
provider's numbers come from.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from boxbench.models import (
    Aggregate,
    AuditResolution,
    Benchmark,
    Measurement,
    MeasurementKind,
    Outcome,
    Provider,
    ResolutionKind,
    Run,
    RunStatus,
    Section,
    Trial,
    TrialState,
    Unit,
)
from stats import audit as stats_audit
from stats import bars, estimators, labels, scores, workload

MAX_DERIVED_STAGES = 8  # 2^8 - 1 = 255 stage subsets precomputed per provider and unit
MAX_POINTS = 400  # per-trial points drawn per provider; beyond, evenly spaced ranks
REFUSAL_LABELS = {"R401": "refused_capability", "R402": "not_offered", "R403": "account_limit"}
POOLED = "pooled_median"  # many calls per trial (Latency per Call): statistics over pooled calls
TIME_UNITS = frozenset({"ms", "s", "us", "µs", "min"})  # a time median carries a 95 % interval


class PublishRefused(Exception):
    """Publishing (or resolving) is not allowed yet; the message says what is in the way."""


# ---------------------------------------------------------------------------------------------
# The audit


def audit_frame(run: Run) -> pd.DataFrame:
    """One row per successful trial and main metric, in the columns stats.audit expects.

    Facts come from the trial (placement, host load) and from its flag measurements (the
    physical-limit and cache checks, named as the audit's columns). On a multi-unit benchmark each
    value is divided by its (provider, unit) lower median: one pair pools units that differ by an
    order of magnitude, run in trace order, so raw values would correlate by construction.
    """
    trials = Trial.objects.filter(run=run, outcome=Outcome.SUCCESS).order_by("seq")
    # Declared by the provider (runner/declarations); absent means its sandboxes are remote.
    shares_job_host = {
        slug: (declaration or {}).get("shares_job_host") is True
        for slug, declaration in Provider.objects.filter(
            id__in=trials.values("provider_id")
        ).values_list("slug", "declaration")
    }
    facts = {
        trial_id: (provider, benchmark, unit, metric, direction, builds, seq, rnd, batch,
                   started, ended, in_flight, {**(placement or {}), **(host_load or {})})
        for (trial_id, provider, benchmark, unit, metric, direction, builds, seq, rnd, batch,
             started, ended, in_flight, placement, host_load) in trials.values_list(
            "id", "provider__slug", "benchmark__slug", "unit_id", "benchmark__metric",
            "benchmark__direction", "benchmark__steps_include_create_or_build", "seq", "round",
            "batch", "started_at", "ended_at", "in_flight", "placement", "host_load",
        )
    }  # fmt: skip
    measured = (
        Measurement.objects.filter(
            trial__run=run, trial__outcome=Outcome.SUCCESS, kind=MeasurementKind.METRIC
        )
        .filter(Q(name__in=stats_audit.FLAGS) | Q(name=F("trial__benchmark__metric")))
        .order_by()
    )
    values: dict = {}
    flags: dict = {}
    for trial_id, name, value in measured.values_list("trial_id", "name", "value"):
        if name in stats_audit.FLAGS:
            if value is not None:
                flags.setdefault(trial_id, {})[name] = float(value)
        elif value is not None:
            values[trial_id] = value
    records = []
    for trial_id, value in values.items():
        (provider, benchmark, unit, _, direction, builds, seq, rnd, batch, started, ended,
         in_flight, known) = facts[trial_id]  # fmt: skip
        record = {
            "provider": provider,
            "benchmark": benchmark,
            "unit": unit,
            "trial_id": str(trial_id),
            "value": value,
            "seq": seq,
            "round": rnd,
            "batch": batch or "",
            "started_at": started.timestamp() if started else np.nan,
            "ended_at": ended.timestamp() if ended else np.nan,
            "in_flight": np.nan if in_flight is None else in_flight,
            "lower_is_better": direction != "higher",
            "steps_create_or_build": builds,
            "shares_job_host": shares_job_host.get(provider, False),
        }
        for fact in AUDIT_FACTS:
            if fact in known:
                record[fact] = known[fact]
        record.update(flags.get(trial_id, {}))
        records.append(record)
    if not records:
        return pd.DataFrame(columns=list(stats_audit.REQUIRED))
    frame = pd.DataFrame.from_records(records)
    return _normalize_multi_unit(frame).drop(columns="unit")


# Facts read from a trial's placement and host load; the flags come from its measurements.
AUDIT_FACTS = tuple(
    f for f in (*stats_audit.FLOAT_FACTS, "cpu_model")
    if f not in ("round", "started_at", "ended_at", "in_flight")
)  # fmt: skip


def _normalize_multi_unit(frame: pd.DataFrame) -> pd.DataFrame:
    """Divide each value by its (provider, benchmark, unit) lower median where the benchmark
    has several units, so the audit sees one comparable data point per trial."""
    units = frame.groupby("benchmark")["unit"].transform("nunique")
    multi = units > 1
    if not multi.any():
        return frame
    cell = frame.loc[multi].groupby(["provider", "benchmark", "unit"])["value"]
    medians = cell.transform(lambda v: estimators.median(v.to_numpy(dtype=float)))
    frame.loc[multi, "value"] = frame.loc[multi, "value"] / medians
    return frame


def run_audit(run: Run) -> dict:
    """Audit the run's successful trials and store the report on the run."""
    frame = audit_frame(run)
    report = stats_audit.audit(frame) if len(frame) else _empty_report()
    run.audit_report = report
    run.audited_at = timezone.now()
    run.save(update_fields=["audit_report", "audited_at"])
    return report


def _empty_report() -> dict:
    return {"schema_version": 1, "q_level": stats_audit.Q_LEVEL, "families": {}, "pairs": []}


def failing_checks(report: dict) -> list[tuple[str, str, str]]:
    """(provider, benchmark, check) of every failed check in the report."""
    found = []
    for pair in report.get("pairs", []):
        for check, finding in pair.get("checks", {}).items():
            if finding.get("verdict") == "fail":
                found.append((pair["provider"], pair["benchmark"], check))
    return found


def unresolved_failures(run: Run) -> list[tuple[str, str, str]]:
    resolved = set(
        AuditResolution.objects.filter(run=run).values_list(
            "provider__slug", "benchmark__slug", "check_name"
        )
    )
    return [f for f in failing_checks(run.audit_report or {}) if f not in resolved]


def resolution_problem(run: Run, provider: str, benchmark: str, check: str, kind: str) -> str:
    """Why this resolution cannot be recorded, or "" when it can."""
    if not run.audit_report:
        return f"run {run.id} has no audit report yet: run `bench audit` first"
    if (provider, benchmark, check) not in failing_checks(run.audit_report):
        return f"{provider} / {benchmark} / {check} did not fail the audit of run {run.id}"
    if kind == ResolutionKind.OUTLIERS_EXCLUDED and check != "outliers":
        return "only the outliers check is resolved by excluding outliers"
    if kind not in ResolutionKind.values:
        return f"{kind!r} is not one of {', '.join(ResolutionKind.values)}"
    return ""


def apply_resolution(resolution: AuditResolution) -> int:
    """Save a resolution; an outlier exclusion also marks the audit's excluded trials excluded.

    Returns the number of trials excluded. All or nothing: one transaction.
    """
    run = resolution.run
    problem = resolution_problem(
        run, resolution.provider.slug, resolution.benchmark.slug, resolution.check_name,
        resolution.kind,
    )  # fmt: skip
    if problem:
        raise PublishRefused(problem)
    excluded = 0
    with transaction.atomic():
        resolution.save()
        if resolution.kind == ResolutionKind.OUTLIERS_EXCLUDED:
            for pair in run.audit_report["pairs"]:
                if (pair["provider"], pair["benchmark"]) != (
                    resolution.provider.slug,
                    resolution.benchmark.slug,
                ):
                    continue
                for item in pair.get("excluded_trials", []):
                    excluded += Trial.objects.filter(
                        run=run, id=item["trial_id"], outcome=Outcome.SUCCESS
                    ).update(
                        outcome=Outcome.EXCLUDED,
                        cause=f"Excluded by the audit's outlier rule: {item['reason']} "
                        f"(value {item['value']:g}).",
                    )
    return excluded


def publish(run: Run, actor=None) -> Run:
    """Publish a completed run whose audit has no unresolved failure, then materialize."""
    if run.published:
        raise PublishRefused(f"run {run.id} is already published")
    if run.status != RunStatus.COMPLETED:
        raise PublishRefused(f"run {run.id} is {run.status}; only a completed run is published")
    if run.manifest.get("demo"):
        raise PublishRefused(f"run {run.id} is a demo run against loopback fakes: never published")
    if run.audit_report is None:
        run_audit(run)
    unresolved = unresolved_failures(run)
    if unresolved:
        names = ", ".join(f"{p} / {b} / {c}" for p, b, c in unresolved)
        raise PublishRefused(
            f"run {run.id} has unresolved audit failures: {names}. Resolve each (outliers "
            "excluded, effect explained, or pair re-run) before publishing."
        )
    with transaction.atomic():
        changed = Run.objects.filter(pk=run.pk, published=False).update(
            published=True, published_at=timezone.now()
        )
        if changed != 1:
            raise PublishRefused(f"run {run.id} was published by someone else meanwhile")
        run.refresh_from_db()
        materialize()
    return run


# ---------------------------------------------------------------------------------------------
# Materializing the aggregates


def leaderboard_sources() -> dict[int, dict[int, Run]]:
    """{benchmark id: {provider id: run}}: each provider's numbers on a benchmark come from the
    latest published run holding finished trials of that provider on that benchmark, so a
    re-run of one pair replaces that pair only."""
    published = {run.id: run for run in Run.objects.published()}
    cells = (
        Trial.objects.filter(run_id__in=published, state=TrialState.DONE)
        .values_list("benchmark_id", "provider_id", "run_id")
        .order_by()  # the model's ordering would join DISTINCT and make every row distinct
        .distinct()
    )
    chosen: dict[int, dict[int, Run]] = {}
    for benchmark_id, provider_id, run_id in cells:
        run = published[run_id]
        current = chosen.setdefault(benchmark_id, {}).get(provider_id)
        if current is None or _newer(run, current):
            chosen[benchmark_id][provider_id] = run
    return chosen


def _newer(run: Run, other: Run) -> bool:
    return (run.published_at, str(run.id)) > (other.published_at, str(other.id))


def image_digest(manifest: dict, benchmark: str, providers: list[str] | None = None) -> str:
    """The image digest a benchmark ran on, as the run manifest records it.

    Runs record each provider's image under "images" (runner.schedule.image_identity); given
    `providers` (default: all of the run's), the one digest they share, or "" when they differ
    or none is known. "image_digests" (per benchmark, or "standard") takes precedence.
    """
    digests = manifest.get("image_digests")
    if isinstance(digests, dict):
        return str(digests.get(benchmark) or digests.get("standard") or "")
    images = manifest.get("images")
    if isinstance(images, dict) and images:
        found = {
            str(entry.get("digest") or "")
            for slug, entry in images.items()
            if isinstance(entry, dict) and (providers is None or slug in providers)
        }
        found.discard("")
        return found.pop() if len(found) == 1 else ""
    return str(manifest.get("image_digest") or "")


def ranking_floor(benchmark: Benchmark, run: Run, units: int) -> int:
    """The successes a provider needs on this benchmark in this run before it is ranked.

    The declared floor, lowered to what the run asked for: a run planned with fewer trials per
    unit (or fewer units) than the catalog needs 90 % of its requested successes across all units
    on a multi-unit workload, and its requested N on a single-unit benchmark.
    """
    manifest = run.manifest if isinstance(run.manifest, dict) else {}
    planned = (manifest.get("benchmarks") or {}).get(benchmark.slug) or {}
    requested = planned.get("trials_per_unit")
    if isinstance(requested, bool) or not isinstance(requested, int) or requested < 1:
        requested = benchmark.trials_per_unit
    if units > 1:
        planned_units = len(planned.get("units") or []) or units
        return min(benchmark.ranking_floor, labels.ranking_floor(requested * planned_units))
    return min(benchmark.ranking_floor, requested)


def materialize() -> int:
    """Recompute every Aggregate row from the leaderboard sources; all rows replaced at once."""
    sources = leaderboard_sources()
    benchmarks = Benchmark.objects.filter(id__in=sources).order_by("section", "slug")
    providers = {p.id: p for p in Provider.objects.all()}
    published = list(Run.objects.published().order_by("-published_at", "-id"))
    rows: list[Aggregate] = []
    boards = []
    for benchmark in benchmarks:
        board = _benchmark_board(benchmark, sources[benchmark.id], providers, published)
        boards.append(board)
        rows.append(Aggregate(scope="benchmark", key=benchmark.slug, data=board.summary))
        for unit_data in board.units:
            key = f"{benchmark.slug}/{unit_data['unit']}"
            rows.append(Aggregate(scope="unit", key=key, data=unit_data))
    used = {run.id: run for by_provider in sources.values() for run in by_provider.values()}
    for run in used.values():
        data = {"progress": progress(run), "resolutions": resolutions(run)}
        rows.append(Aggregate(scope="run", key=str(run.id), data=data))
    overview = _overview(boards, providers)
    rows.append(Aggregate(scope="overview", key="", data=overview))
    for provider in providers.values():
        data = _provider_page(provider, boards, overview)
        rows.append(Aggregate(scope="provider", key=provider.slug, data=data))
    with transaction.atomic():
        Aggregate.objects.all().delete()
        Aggregate.objects.bulk_create(rows, batch_size=500)
    return len(rows)


def progress(run: Run) -> list[dict]:
    """Trial counts by state and outcome (live while running; materialized once published)."""
    return list(
        Trial.objects.filter(run=run)
        .values("state", "outcome")
        .annotate(n=Count("id"))
        .order_by("state", "outcome")
    )


def resolutions(run: Run) -> list[dict]:
    """How each failed check of the run's audit was resolved, for its report page."""
    found = AuditResolution.objects.filter(run=run).select_related("provider", "benchmark")
    return [
        {
            "provider": r.provider.slug,
            "benchmark": r.benchmark.slug,
            "check_name": r.check_name,
            "kind": r.get_kind_display(),
            "note": r.note,
            "rerun": str(r.rerun_id) if r.rerun_id else None,
            "at": r.at.isoformat(timespec="minutes"),
        }
        for r in found.order_by("provider__slug", "benchmark__slug", "check_name")
    ]


@dataclass
class Board:
    benchmark: Benchmark
    runs: dict[str, Run]  # provider slug -> the run its numbers come from
    summary: dict  # the benchmark page
    units: list[dict]  # one per unit page


def _num(value):
    """JSON-safe float: None for missing or non-finite values."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _cells_q(by_provider: dict[int, Run], prefix: str = "") -> Q:
    """Trials of each provider's chosen run: OR of (run, providers) groups."""
    groups: dict = {}
    for provider_id, run in by_provider.items():
        groups.setdefault(run.id, []).append(provider_id)
    q = Q()
    for run_id, provider_ids in groups.items():
        q |= Q(**{f"{prefix}run_id": run_id, f"{prefix}provider_id__in": provider_ids})
    return q


def _load_trials(benchmark: Benchmark, by_provider: dict[int, Run]):
    """The benchmark's finished trials from each provider's run, and the measurements of the
    successes that the statistics read (the main metric, its pooled calls, the stages)."""
    trials = pd.DataFrame.from_records(
        Trial.objects.filter(_cells_q(by_provider), benchmark=benchmark, state=TrialState.DONE)
        .values_list(
            "id", "unit_id", "provider_id", "outcome", "cost_usd", "replaces_id", "owner", "cause"
        )
        # Execution order: the bootstrap draws indices into the values, so their order is part
        # of the published interval (docs/methodology.md).
        .order_by("run_id", "seq"),
        columns=["trial", "unit", "provider", "outcome", "cost_usd", "replaces", "owner", "cause"],
    )
    wanted = Q(kind=MeasurementKind.STAGE) | Q(kind=MeasurementKind.METRIC, name=benchmark.metric)
    if benchmark.statistic == POOLED:
        wanted |= Q(kind=MeasurementKind.METRIC, name__startswith=f"{benchmark.metric}.call_")
    measurements = pd.DataFrame.from_records(
        Measurement.objects.filter(
            _cells_q(by_provider, "trial__"),
            wanted,
            trial__benchmark=benchmark,
            trial__outcome=Outcome.SUCCESS,
        )
        .values_list("trial_id", "kind", "name", "value")
        .order_by(),
        columns=["trial", "kind", "name", "value"],
    )
    return trials, measurements


def _refusals(benchmark: Benchmark, published: list[Run]) -> dict[str, dict]:
    """The planners' refusals of this benchmark by provider slug, the latest run's first."""
    found: dict[str, dict] = {}
    for run in published:
        manifest = run.manifest if isinstance(run.manifest, dict) else {}
        for refusal in manifest.get("refusals", []) or []:
            if isinstance(refusal, dict) and refusal.get("benchmark") == benchmark.slug:
                found.setdefault(str(refusal.get("provider", "")), refusal)
    return found


def _source(run: Run, benchmark: Benchmark, providers: list[str] | None = None) -> dict:
    return {
        "run": str(run.id),
        "run_name": run.name,
        "image_digest": image_digest(run.manifest or {}, benchmark.slug, providers),
    }


def _sources(runs: dict[str, Run], benchmark: Benchmark, names: dict[str, str]) -> list[dict]:
    """Each distinct run behind a page, the latest first, with the providers it feeds."""
    by_run: dict = {}
    for slug, run in runs.items():
        by_run.setdefault(run.id, (run, []))[1].append(slug)
    ordered = sorted(by_run.values(), key=lambda item: (item[0].published_at, str(item[0].id)))
    return [
        {**_source(run, benchmark, slugs), "providers": sorted(names[slug] for slug in slugs)}
        for run, slugs in reversed(ordered)
    ]


@dataclass
class Cell:
    """One provider on one unit: what the statistics read."""

    values: np.ndarray  # the main metric of each successful trial
    stages: dict  # stage -> per-trial values (NaN where not recorded)
    costs: np.ndarray  # cost of each successful trial (NaN where not recorded)
    calls: list  # pooled calls per successful trial (pooled_median only)
    outcomes: dict
    failures: int  # unreplaced provider failures


def _empty_cell() -> Cell:
    return Cell(np.array([]), {}, np.array([]), [], {}, 0)


EMPTY_CELL = _empty_cell()  # read only: a provider with no trial on a unit


def _cells(benchmark, trials, measurements, stages) -> dict[tuple[int, int], Cell]:
    """Group the trials by (unit, provider) with their values as numpy arrays.

    Trial ids are UUIDs, slow to hash and group in pandas, so each trial gets its row number
    once and every measurement is placed into a per-trial array by that number.
    """
    size = len(trials)
    position = {trial: i for i, trial in enumerate(trials["trial"])}
    row = np.fromiter(
        (position.get(t, -1) for t in measurements["trial"]), dtype=np.int64,
        count=len(measurements),
    )  # fmt: skip
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
    # A trial cut short has an unknown outcome, which stopped refilling (docs/runner.md): it is
    # not an unreplaced provider failure.
    cut_short = (trials["owner"] == "unknown").to_numpy(dtype=bool) & np.fromiter(
        (str(c).startswith("cut short: ") for c in trials["cause"]), bool, size
    )
    keys = trials[["unit", "provider"]].assign(
        success=(outcome == Outcome.SUCCESS) & np.isfinite(metric),
        failure=(outcome == Outcome.PROVIDER_FAILURE) & unreplaced & ~cut_short,
    )
    succeeded = keys["success"].to_numpy()
    cells: dict[tuple[int, int], Cell] = {}
    for key, rows in keys.groupby(["unit", "provider"], sort=False).indices.items():
        rows = rows[succeeded[rows]]
        trial_calls = []
        if benchmark.statistic == POOLED:
            # A trial without recorded calls counts as one call: its own value.
            trial_calls = [calls.get(int(r), metric[r : r + 1]) for r in rows]
        cells[(int(key[0]), int(key[1]))] = Cell(
            values=metric[rows],
            stages={s: stage_values[s][rows] for s in stages},
            costs=costs[rows],
            calls=trial_calls,
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


def _benchmark_board(
    benchmark: Benchmark,
    by_provider: dict[int, Run],
    providers: dict[int, Provider],
    published: list[Run],
) -> Board:
    trials, measurements = _load_trials(benchmark, by_provider)
    units = list(Unit.objects.filter(id__in=set(trials["unit"])).order_by("slug"))
    runs = {providers[i].slug: run for i, run in by_provider.items()}
    # A refusal explains a missing provider only: one with finished trials shows their numbers.
    refusals = {s: r for s, r in _refusals(benchmark, published).items() if s not in runs}
    in_run = [providers[i] for i in sorted(by_provider, key=lambda i: providers[i].slug)]
    refused = [
        p for p in providers.values() if p.slug in refusals and p.id not in by_provider
    ]  # fmt: skip
    lower = benchmark.direction != "higher"
    stages = [s for s in benchmark.stage_names if isinstance(s, str)]
    cells = _cells(benchmark, trials, measurements, stages)
    names = {p.slug: p.name for p in providers.values()}
    floors = {slug: ranking_floor(benchmark, run, len(units)) for slug, run in runs.items()}
    latest = max(runs.values(), key=lambda r: (r.published_at, str(r.id)))
    context = {
        "benchmark": benchmark.slug,
        "benchmark_title": benchmark.title,
        **_source(latest, benchmark, [s for s, run in runs.items() if run.id == latest.id]),
        "sources": _sources(runs, benchmark, names),
        "metric": benchmark.metric,
        "measure_unit": benchmark.unit,
        "lower_is_better": lower,
        "stages": stages,
    }
    multi = len(units) > 1
    totals = {
        p.slug: sum(len(cells.get((u.id, p.id), EMPTY_CELL).values) for u in units) for p in in_run
    }
    unit_pages = []
    per_unit_median: dict[str, dict[str, float | None]] = {p.slug: {} for p in in_run}
    per_unit_cost: dict[str, dict[str, float | None]] = {p.slug: {} for p in in_run}
    cost_complete = {p.slug: True for p in in_run}
    for unit in units:
        rows = []
        for provider in in_run + refused:
            cell = cells.get((unit.id, provider.id), EMPTY_CELL)
            row = _unit_row(provider, cell, stages, lower, benchmark)
            if provider.slug in runs:
                row.update(_source(runs[provider.slug], benchmark, [provider.slug]))
            n = row["n"]
            # On a multi-unit workload the floor counts successes across all units; a unit row
            # is ranked once the provider has any success on it and the workload reaches it.
            successes = (totals.get(provider.slug, 0) if n else 0) if multi else n
            state = _state(
                provider, refusals, successes, floors.get(provider.slug, 1), cell.failures
            )
            row.update(labels.decide(state).to_dict())
            rows.append(row)
            if provider.slug in runs and n:
                per_unit_median[provider.slug][unit.slug] = row["median"]
                if row["mean_cost_usd"] is not None and _provider_cost(provider):
                    per_unit_cost[provider.slug][unit.slug] = row["mean_cost_usd"]
                else:
                    cost_complete[provider.slug] = False
        _rank_rows(rows, "median", lower)
        unit_pages.append(
            {
                **context,
                "unit": unit.slug,
                "unit_title": unit.title or unit.slug,
                # Internal keys for the trials table's query (trial_cell_idx); never in a URL.
                "benchmark_id": benchmark.id,
                "unit_id": unit.id,
                "cells": [[str(run.id), i] for i, run in sorted(by_provider.items())],
                "unit_digest": unit.digest,
                "trial_count": int(sum(sum(c.outcomes.values()) for (u, _), c in cells.items()
                                       if u == unit.id)),
                "derived_available": 0 < len(stages) <= MAX_DERIVED_STAGES,
                "ranking_floors": floors,
                "rows": rows,
            }
        )  # fmt: skip
    summary = _benchmark_summary(
        benchmark, context, unit_pages, in_run + refused, refusals, totals, floors,
        per_unit_median, per_unit_cost, cost_complete, runs,
    )  # fmt: skip
    return Board(benchmark, runs, summary, unit_pages)


def _provider_cost(provider: Provider) -> bool:
    return bool((provider.pricing or {}).get("provider_sourced"))


def _state(provider, refusals, successes, floor, failures, **view) -> labels.ProviderState:
    refusal = refusals.get(provider.slug, {})
    flag = REFUSAL_LABELS.get(str(refusal.get("code", "")))
    missing = refusal.get("missing") or refusal.get("code") or "refused"
    return labels.ProviderState(
        successes=successes,
        ranking_floor=floor,
        unreplaced_provider_failures=failures,
        refused_capability=str(missing) if flag == "refused_capability" else None,
        not_offered=flag == "not_offered",
        account_limit=flag == "account_limit",
        **view,
    )


def _provider_info(provider: Provider) -> dict:
    return {
        "provider": provider.slug,
        "provider_name": provider.name,
        "region_marker": provider.region_marker,
        "region_note": provider.region_note,
    }


def _unit_row(provider: Provider, cell: Cell, stages, lower: bool, benchmark: Benchmark) -> dict:
    """Every statistic of one provider on one unit, from its successful trials."""
    values = cell.values
    row = {
        **_provider_info(provider),
        "n": int(values.size),
        "outcomes": cell.outcomes,
        "unreplaced_failures": cell.failures,
        "median": None, "ci_low": None, "ci_high": None, "tail": None, "tail_kind": None,
        "mean": None, "mean_cost_usd": None, "stage_medians": {}, "segments": [], "scale": None,
        "distribution": None, "derived": {},
    }  # fmt: skip
    if values.size == 0:
        return row
    if benchmark.statistic == POOLED:
        median, interval, (tail, tail_kind), mean = _pooled_statistics(cell.calls, lower)
    else:
        median = estimators.median(values)
        interval = estimators.bootstrap_median_ci(values)
        tail, tail_kind = estimators.tail(values, lower)
        mean = estimators.mean(values)
    if benchmark.unit not in TIME_UNITS:
        interval = (None, None)  # the methodology gives an interval to the time median only
    row.update(
        median=median,
        ci_low=interval[0],
        ci_high=interval[1],
        tail=tail,
        tail_kind=tail_kind,
        mean=mean,
        distribution=_distribution(values),
    )
    costs = cell.costs
    if costs.size and np.isfinite(costs).all():
        row["mean_cost_usd"] = _num(costs.mean())
    recorded = [s for s in stages if np.isfinite(cell.stages[s]).any()]
    if recorded:
        columns = {s: cell.stages[s] for s in recorded}
        bar = bars.stacked_bar(values, columns)
        row["stage_medians"] = {s.stage: s.median for s in bar.segments}
        row["segments"] = [
            {"stage": s.stage, "median": s.median, "width": s.width} for s in bar.segments
        ]
        row["scale"] = bar.scale
        if len(stages) <= MAX_DERIVED_STAGES:
            row["derived"] = _derived_views(columns, recorded, lower)
    return row


def _pooled_statistics(calls: list[np.ndarray], lower: bool):
    """Latency per Call: every statistic over the pooled calls of the successful trials; the
    interval resamples whole trials; the tail keeps the 20-trial floor, counted in trials."""
    pooled = np.concatenate(calls)
    interval = estimators.pooled_bootstrap_median_ci(calls)
    if len(calls) >= estimators.TAIL_FLOOR:
        tail = estimators.tail(pooled, lower)
    else:
        tail = (float(pooled.max()), "Slowest") if lower else (float(pooled.min()), "Lowest")
    return estimators.median(pooled), interval, tail, estimators.mean(pooled)


def _distribution(values: np.ndarray) -> dict:
    """Box-plot quartiles (nearest rank) and up to MAX_POINTS per-trial points."""
    ordered = np.sort(values)
    if ordered.size > MAX_POINTS:
        # Evenly spaced ranks keep the shape of the distribution with a bounded page size.
        picks = np.linspace(0, ordered.size - 1, MAX_POINTS).round().astype(int)
        points = ordered[picks]
    else:
        points = ordered
    return {
        "min": float(ordered[0]),
        "p25": estimators.percentile(ordered, 25),
        "p50": estimators.percentile(ordered, 50),
        "p75": estimators.percentile(ordered, 75),
        "max": float(ordered[-1]),
        "points": [float(v) for v in points],
        "points_shown": int(points.size),
    }


def derived_key(selected) -> str:
    """The key of a stage subset in the precomputed derived views (and in the page's URL)."""
    return "+".join(selected)


def _derived_views(columns: dict[str, list], stages: list[str], lower: bool) -> dict:
    """Every non-empty subset of stages, summarized from per-trial sums (no interval)."""
    views = {}
    for size in range(1, len(stages) + 1):
        for selected in itertools.combinations(stages, size):
            view = bars.derived_view(columns, list(selected), lower)
            views[derived_key(selected)] = {
                "trials": view.trials,
                "median": view.median,
                "tail": view.tail,
                "tail_kind": view.tail_label,
            }
    return views


def _rank_rows(rows: list[dict], field: str, lower: bool) -> None:
    """Rank the ranked rows on `field` (ties share the better rank) and order the table."""
    eligible = {r["provider"]: r[field] for r in rows if r["ranked"] and r[field] is not None}
    order = scores.rank({p: -v if lower else v for p, v in eligible.items()})
    for row in rows:
        row["rank"] = order.get(row["provider"])
        if row["provider"] not in order:
            row["ranked"] = False
    rows.sort(key=lambda r: (r["rank"] is None, r["rank"] or 0, r["provider"]))


def _benchmark_summary(
    benchmark, context, unit_pages, providers, refusals, totals, floors, medians, costs,
    cost_complete, runs,
) -> dict:  # fmt: skip
    """The All view: workload values (multi-unit) or the single unit's median per provider.

    The ranking floor (successes across all units) and, on a multi-unit workload, the
    provider-sourced cost apply here; unit medians feed the workload value whenever n > 0.
    """
    multi = len(unit_pages) > 1
    lower = benchmark.direction != "higher"
    values = workload.workload_values(medians, "time") if multi and lower else {}
    cost_values = workload.workload_values(costs, "cost") if multi else {}
    rows = []
    for provider in providers:
        slug = provider.slug
        source = _source(runs[slug], benchmark, [slug]) if slug in runs else {}
        if multi:
            failures = sum(
                r["unreplaced_failures"]
                for page in unit_pages
                for r in page["rows"]
                if r["provider"] == provider.slug
            )
            state = _state(
                provider, refusals, totals.get(provider.slug, 0), floors.get(provider.slug, 1),
                failures, view_needs_provider_cost=True,
                has_provider_cost=_provider_cost(provider) and cost_complete.get(provider.slug),
            )  # fmt: skip
            status = labels.decide(state).to_dict()
            value = values.get(provider.slug)
            cost = cost_values.get(provider.slug)
            row = {
                **_provider_info(provider),
                **status,
                **source,
                "n": totals.get(provider.slug, 0),
                "ranking_floor": floors.get(provider.slug),
                "workload_value": value.value if value and status["ranked"] else None,
                "substituted_units": [s.unit for s in value.substitutions] if value else [],
                "notes": [s.note for s in value.substitutions] if value else [],
                "workload_cost_usd": cost.value if cost and status["ranked"] else None,
            }
        else:
            only = next(
                (r for page in unit_pages for r in page["rows"] if r["provider"] == provider.slug),
                None,
            )
            if only is None:  # no unit page at all: nothing finished, only refusals
                state = _state(provider, refusals, 0, floors.get(provider.slug, 1), 0)
                only = {**labels.decide(state).to_dict(), "n": 0, "median": None,
                        "mean_cost_usd": None}  # fmt: skip
            row = {
                **_provider_info(provider),
                **source,
                "label": only["label"],
                "meaning": only["meaning"],
                "ranked": only["ranked"],
                "n": only["n"],
                "ranking_floor": floors.get(provider.slug),
                "workload_value": only["median"] if only["ranked"] else None,
                "substituted_units": [],
                "notes": [],
                "workload_cost_usd": only["mean_cost_usd"] if only["ranked"] else None,
            }
        rows.append(row)
    _rank_rows(rows, "workload_value", lower)
    latest_floor = floors.get(
        next(
            iter(sorted(runs, key=lambda s: (runs[s].published_at, str(runs[s].id)), reverse=True))
        ),
        None,
    )
    return {
        **context,
        "title": benchmark.title,
        "version": benchmark.version,
        "description": benchmark.description,
        "section": benchmark.section,
        "section_label": Section(benchmark.section).label,
        "statistic": benchmark.statistic,
        "clock": benchmark.clock,
        "cpus": benchmark.cpus,
        "memory_mib": benchmark.memory_mib,
        "trials_per_unit": benchmark.trials_per_unit,
        "ranking_floor": latest_floor if latest_floor is not None else benchmark.ranking_floor,
        "published_at": max(r.published_at for r in runs.values()).isoformat(),
        "multi_unit": multi,
        "units": [
            {"slug": u["unit"], "title": u["unit_title"], "trial_count": u["trial_count"]}
            for u in unit_pages
        ],
        "rows": rows,
    }


def _overview(boards: list[Board], providers: dict[int, Provider]) -> dict:
    """The score tree with titles, composites, and the run behind every benchmark."""
    results = []
    for board in boards:
        benchmark = board.benchmark
        lower = benchmark.direction != "higher"
        for unit in board.units:
            medians = {r["provider"]: r["median"] for r in unit["rows"] if r["ranked"]}
            if benchmark.section == Section.WORKLOAD:
                results.append(
                    scores.UnitResult("workload_time", benchmark.slug, unit["unit"], medians, True)
                )
                unit_costs = {
                    r["provider"]: r["mean_cost_usd"]
                    for r in unit["rows"]
                    if r["ranked"] and r["mean_cost_usd"] and _slug_cost(providers, r["provider"])
                }
                results.append(
                    scores.UnitResult("workload_cost", benchmark.slug, unit["unit"], unit_costs)
                )
            else:
                results.append(
                    scores.UnitResult(benchmark.section, benchmark.slug, unit["unit"], medians,
                                      lower)
                )  # fmt: skip
    tree = scores.score_tree(results).to_dict()
    workloads = [b for b in boards if b.benchmark.section == Section.WORKLOAD]
    composite = {}
    for kind, field in (("time", "workload_value"), ("cost", "workload_cost_usd")):
        by_provider: dict[str, dict] = {}
        for board in workloads:
            for row in board.summary["rows"]:
                by_provider.setdefault(row["provider"], {})[board.benchmark.slug] = row[field]
        composite[kind] = workload.composites(by_provider) if workloads else {}
    return {
        "tree": tree,
        "providers": {p.slug: _provider_info(p) for p in providers.values()},
        "benchmarks": {
            b.benchmark.slug: {
                "title": b.benchmark.title,
                "run": b.summary["run"],
                "run_name": b.summary["run_name"],
                "image_digest": b.summary["image_digest"],
                "sources": b.summary["sources"],
                "provider_runs": {
                    slug: _source(run, b.benchmark, [slug]) for slug, run in sorted(b.runs.items())
                },
                "units": {u["unit"]: u["unit_title"] for u in b.units},
            }
            for b in boards
        },
        "composites": composite,
    }


def _slug_cost(providers: dict[int, Provider], slug: str) -> bool:
    return any(p.slug == slug and _provider_cost(p) for p in providers.values())


def _provider_page(provider: Provider, boards: list[Board], overview: dict) -> dict:
    """Everything measured on one provider, with its declaration and pricing."""
    results = []
    for board in boards:
        summary = next((r for r in board.summary["rows"] if r["provider"] == provider.slug), None)
        if summary is None:
            continue
        units = []
        for unit in board.units:
            row = next((r for r in unit["rows"] if r["provider"] == provider.slug), None)
            if row is not None:
                units.append(
                    {
                        "unit": unit["unit"],
                        "unit_title": unit["unit_title"],
                        **{k: row[k] for k in ("rank", "label", "n", "median", "ci_low",
                                               "ci_high", "tail", "tail_kind", "mean")},
                    }
                )  # fmt: skip
        results.append(
            {
                "benchmark": board.benchmark.slug,
                "title": board.benchmark.title,
                "measure_unit": board.benchmark.unit,
                "run": summary.get("run", board.summary["run"]),
                "run_name": summary.get("run_name", board.summary["run_name"]),
                "rank": summary["rank"],
                "label": summary["label"],
                "meaning": summary["meaning"],
                "workload_value": summary["workload_value"],
                "multi_unit": board.summary["multi_unit"],
                "units": units,
            }
        )
    tree = overview["tree"]
    return {
        **_provider_info(provider),
        "region": provider.region,
        "adapter": provider.adapter,
        "declaration": provider.declaration,
        "declaration_digest": provider.declaration_digest,
        "pricing": provider.pricing,
        "pricing_digest": provider.pricing_digest,
        "overall": {
            "score": tree["scores"].get(provider.slug),
            "rank": tree["ranks"].get(provider.slug),
        },
        "sections": [
            {
                "label": s["label"],
                "score": s["scores"].get(provider.slug),
                "rank": s["ranks"].get(provider.slug),
            }
            for s in tree["children"]
        ],
        "results": results,
    }
