"""The benchmark page (the All view) and its unit pages, built from one benchmark's cells."""

from __future__ import annotations

from dataclasses import dataclass, field

from boxbench.leaderboard import shapes
from boxbench.leaderboard.burst import default_unit
from boxbench.leaderboard.cells import (
    EMPTY_CELL,
    Cell,
    add_counts,
    group_cells,
    load_counts,
    load_trials,
)
from boxbench.leaderboard.sources import (
    job_host_series,
    other_series,
    planned_refusals,
    run_floor,
    run_source,
    run_sources,
    unit_scope,
)
from boxbench.leaderboard.states import provider_cost, provider_info, provider_state
from boxbench.models import Benchmark, Direction, Provider, Run, Section, Unit
from runner.benchmarks import code_definition, latency_per_call
from runner.rules import Refusal
from stats import bars, labels, scores, summary, workload

# Unit titles older stored versions carry that a reader cannot read, in the words of the
# current definition: stored definitions never change, so the pages say them better.
UNIT_TITLES = {(latency_per_call.DEFINITION.slug, "`true`"): latency_per_call.UNIT_TITLE}


@dataclass
class Board:
    benchmark: Benchmark
    runs: dict[str, Run]  # provider slug -> the run its numbers come from
    summary: shapes.BenchmarkPage
    units: list[shapes.UnitPage]
    # What the comparisons resample: (unit id, provider id) -> its trials' values.
    cells: dict[tuple[int, int], Cell] = field(default_factory=dict)


@dataclass
class Build:
    """One benchmark's board while it is built: what every page of it shares, and what its unit
    pages tally per provider slug for the All view."""

    benchmark: Benchmark
    runs: dict[str, Run]  # provider slug -> the run its numbers come from
    providers: list[Provider]  # those with finished trials (by slug), then those only refused
    refusals: dict[str, Refusal]  # the planners' refusals of providers without finished trials
    floors: dict[str, int]  # successes a provider needs before it is ranked
    totals: dict[str, int]  # successes across all units
    all_view_floors: dict[str, int]  # the All view's floor: the full one when it spans every unit
    context: shapes.BenchmarkContext  # the keys every page of the benchmark repeats
    medians: dict[str, dict[str, float | None]] = field(default_factory=dict)  # slug: unit: median
    costs: dict[str, dict[str, float | None]] = field(default_factory=dict)  # slug: unit: mean cost
    cost_complete: dict[str, bool] = field(default_factory=dict)  # every unit has a sourced cost

    @property
    def lower(self) -> bool:
        return self.benchmark.direction != Direction.HIGHER

    def state(self, provider: Provider, successes: int, failures: int, floor=None, **view):
        floor = floor if floor is not None else self.floors.get(provider.slug, 1)
        return provider_state(
            provider, self.refusals, successes, floor, failures, self.benchmark.slug, **view
        )

    def source(self, slug: str) -> shapes.Source | dict:
        """The run (and image) behind one provider's numbers; {} for one only refused."""
        return run_source(self.runs[slug], self.benchmark, [slug]) if slug in self.runs else {}


def benchmark_board(
    benchmark: Benchmark,
    by_provider: dict[int, Run],
    providers: dict[int, Provider],
    published: list[Run],
) -> Board:
    trials, measurements = load_trials(benchmark, by_provider)
    counts = load_counts(benchmark, by_provider)
    unit_ids = set(trials["unit"]) | {unit for unit, *_ in counts}
    units = list(Unit.objects.filter(id__in=unit_ids).order_by("slug"))
    declared_units = Unit.objects.filter(benchmark=benchmark).count()
    runs = {providers[i].slug: run for i, run in by_provider.items()}
    # A refusal explains a missing provider only: one with finished trials shows their numbers.
    refusals = {s: r for s, r in planned_refusals(benchmark, published).items() if s not in runs}
    in_run = [providers[i] for i in sorted(by_provider, key=lambda i: providers[i].slug)]
    refused = [p for p in providers.values() if p.slug in refusals and p.id not in by_provider]
    stages = [s for s in benchmark.stage_names if isinstance(s, str)]
    cells = group_cells(benchmark, trials, measurements, stages)
    add_counts(cells, counts)
    build = Build(
        benchmark=benchmark,
        runs=runs,
        providers=in_run + refused,
        refusals=refusals,
        floors={slug: run_floor(benchmark, run, declared_units) for slug, run in runs.items()},
        totals={
            p.slug: sum(cells.get((u.id, p.id), EMPTY_CELL).samples.values.size for u in units)
            for p in in_run
        },
        # A run over a subset of the units is ranked on an All view that spans every unit only
        # with the declared (full) floor; on a board that is itself a subset, its own floor.
        all_view_floors={
            slug: max(
                run_floor(benchmark, run, declared_units),
                benchmark.ranking_floor if len(units) >= declared_units else 0,
            )
            for slug, run in runs.items()
        },
        context={
            **_context(benchmark, runs, {p.slug: p.name for p in providers.values()}, stages),
            # Published as the subset it covers, never as the whole workload.
            "unit_scope": unit_scope(len(units), declared_units),
            "job_host_series": _series(by_provider, providers),
            "other_series": other_series(benchmark.id, by_provider, published, providers),
        },
        medians={p.slug: {} for p in in_run},
        costs={p.slug: {} for p in in_run},
        cost_complete={p.slug: True for p in in_run},
    )
    method = summary.Method(build.lower, benchmark.statistic, benchmark.unit, stages)
    # A burst's tiers are not a workload: its default tier alone is its result.
    scored_alone = default_unit(benchmark.slug, [u.slug for u in units]) is not None
    unit_pages = [
        {
            **_unit_page(build, unit, cells, method, multi=len(units) > 1 and not scored_alone),
            # Internal keys for the trials table's query (trial_cell_idx); never in a URL.
            "benchmark_id": benchmark.id,
            "unit_id": unit.id,
            "cells": [[str(run.id), i] for i, run in sorted(by_provider.items())],
        }
        for unit in units
    ]
    return Board(benchmark, runs, _summary_page(build, unit_pages), unit_pages, cells)


def _series(by_provider: dict[int, Run], providers: dict[int, Provider]) -> dict:
    """The job hosts every number of the board was timed from: {"type", "region"}."""
    provider_id, run = next(iter(by_provider.items()))
    kind, region = job_host_series(run, providers[provider_id].slug)
    return {"type": kind or "not recorded", "region": region or "not recorded"}


def _context(
    benchmark: Benchmark, runs: dict[str, Run], names: dict[str, str], stages
) -> shapes.BenchmarkContext:
    latest = max(runs.values(), key=lambda r: (r.published_at, str(r.id)))
    return {
        "benchmark": benchmark.slug,
        "benchmark_title": benchmark.title,
        **run_source(latest, benchmark, [s for s, run in runs.items() if run.id == latest.id]),
        "sources": run_sources(runs, benchmark, names),
        "metric": benchmark.metric,
        "measure_unit": benchmark.unit,
        "lower_is_better": benchmark.direction != Direction.HIGHER,
        "stages": stages,
        # Workloads have a Cost view beside Time (the score tree's workload cost section).
        "cost_view": benchmark.section == Section.WORKLOAD,
        # Recorded without charting it (Destroy): tables and downloads, no chart, no score.
        "recorded_only": not benchmark.charted,
        "download_note": _download_note(benchmark.slug),
    }


def _download_note(slug: str) -> str:
    """What every row of the benchmark's downloads says (BenchmarkDefinition.download_note)."""
    definition = code_definition(slug)
    return definition.download_note if definition is not None else ""


def _unit_page(
    build: Build, unit: Unit, cells: dict, method: summary.Method, multi: bool
) -> shapes.UnitPage:
    """One unit's table: a row per provider, labelled and ranked; tallies its medians and costs
    into the build for the All view."""
    rows, cost_rows = [], []
    for provider in build.providers:
        slug = provider.slug
        cell = cells.get((unit.id, provider.id), EMPTY_CELL)
        row = {**_unit_row(provider, cell, method, build.benchmark.clock), **build.source(slug)}
        n = row["n"]
        # On a multi-unit workload the floor counts successes across all units, everywhere: a
        # unit row is ranked once the provider has a success on it and the workload reaches its
        # All view's floor. Failures are the chart's own: the unit's unreplaced failures only.
        successes = (build.totals.get(slug, 0) if n else 0) if multi else n
        failures = cell.failures
        floor = build.all_view_floors.get(slug) if multi else None
        row.update(labels.decide(build.state(provider, successes, failures, floor)).to_dict())
        if n and summary.derived_available(build.context["stages"]):
            # A stage subset none of the provider's trials recorded: no result in this view.
            empty = {"trials": 0, "median": None, "tail": None, "tail_kind": None}
            shown = build.state(provider, successes, failures, floor, has_result_in_view=False)
            for key in summary.derived_keys(build.context["stages"]):
                view = row["derived"].setdefault(key, dict(empty))
                view.update(labels.decide(shown).to_dict() if not view["trials"] else {})
        rows.append(row)
        stage_costs = row.pop("stage_costs")  # shown in the Cost view only
        if build.context["cost_view"]:
            counts = (successes, failures, floor)
            cost_rows.append(_cost_row(build, provider, row, stage_costs, *counts))
        if slug in build.runs and n:
            build.medians[slug][unit.slug] = row["median"]
            if row["mean_cost_usd"] is not None and provider_cost(provider):
                build.costs[slug][unit.slug] = row["mean_cost_usd"]
            else:
                build.cost_complete[slug] = False
    summary.rank_rows(rows, "median", build.lower)
    summary.rank_rows(cost_rows, "mean_cost_usd", lower=True)
    trial_count = sum(sum(c.outcomes.values()) for (u, _), c in cells.items() if u == unit.id)
    return {
        **build.context,
        "unit": unit.slug,
        "unit_title": UNIT_TITLES.get((build.benchmark.slug, unit.title), unit.title or unit.slug),
        "unit_digest": unit.digest,
        "trial_count": int(trial_count),
        "derived_available": summary.derived_available(build.context["stages"]),
        "max_points": summary.MAX_POINTS,  # the distribution chart's dots per provider
        "ranking_floors": build.floors,
        "rows": rows,
        "cost_rows": cost_rows,
    }


def _cost_row(
    build: Build, provider: Provider, row: shapes.UnitRow, stage_costs, successes, failures, floor
) -> shapes.CostRow:
    """The Cost view's row: the shown cost (mean cost per success) and its stage costs, for a
    provider with a provider-sourced cost on every trial; any other reads Not Displayed."""
    sourced = provider_cost(provider) and row["mean_cost_usd"] is not None
    view = {"view_needs_provider_cost": True, "has_provider_cost": sourced}
    state = build.state(provider, successes, failures, floor, **view)
    return {
        **provider_info(provider, build.benchmark.clock),
        **build.source(provider.slug),
        **labels.decide(state).to_dict(),
        "n": row["n"],
        "mean_cost_usd": row["mean_cost_usd"] if sourced else None,
        "cost_ci_low": row["cost_ci_low"] if sourced else None,
        "cost_ci_high": row["cost_ci_high"] if sourced else None,
        "stage_costs": stage_costs if sourced else None,
    }


def _unit_row(provider: Provider, cell: Cell, method: summary.Method, clock: str) -> dict:
    """Every statistic of one provider on one unit, from its successful trials."""
    return {
        **provider_info(provider, clock),
        "outcomes": cell.outcomes,
        "unreplaced_failures": cell.failures,
        **summary.summarize(cell.samples, method),
    }


def _summary_page(build: Build, unit_pages: list[shapes.UnitPage]) -> shapes.BenchmarkPage:
    """The All view: workload values (multi-unit) or the single unit's median per provider.

    The ranking floor (successes across all units) and, on a multi-unit workload, the
    provider-sourced cost apply here; unit medians feed the workload value whenever n > 0.
    """
    benchmark, runs = build.benchmark, build.runs
    alone = default_unit(benchmark.slug, [page["unit"] for page in unit_pages])
    multi = len(unit_pages) > 1 and alone is None
    if alone is not None:
        shown = [page for page in unit_pages if page["unit"] == alone]
        rows = [_single_unit_row(build, p, shown) for p in build.providers]
    elif multi:
        values = workload.workload_values(build.medians, "time") if build.lower else {}
        costs = workload.workload_values(build.costs, "cost")
        rows = [_workload_row(build, p, unit_pages, values, costs) for p in build.providers]
    else:
        rows = [_single_unit_row(build, p, unit_pages) for p in build.providers]
    summary.rank_rows(rows, "workload_value", build.lower)
    if build.context["cost_view"]:
        _rank_costs(rows, unit_pages)
        _share_stage_costs(rows, unit_pages)
    latest = max(runs, key=lambda s: (runs[s].published_at, str(runs[s].id)))
    latest_floor = build.floors.get(latest)
    return {
        **build.context,
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


def _rank_costs(rows: list[shapes.SummaryRow], unit_pages: list[shapes.UnitPage]) -> None:
    """The Cost view ranks the All view's rows by their workload cost, lower first. Its labels:
    on one unit, the unit's Cost view labels (a provider without a sourced cost reads Not
    Displayed); on several, the cost labels each workload row was given."""
    shown = {
        r["provider"]: -r["workload_cost_usd"] for r in rows if r["workload_cost_usd"] is not None
    }
    ranks = scores.rank(shown)
    single = {r["provider"]: r for r in unit_pages[0]["cost_rows"]} if len(unit_pages) == 1 else {}
    for row in rows:
        row["cost_rank"] = ranks.get(row["provider"])
        if row["provider"] in single:
            row["cost_label"] = single[row["provider"]]["label"]
            row["cost_meaning"] = single[row["provider"]]["meaning"]
        elif "cost_label" not in row:  # a provider only refused: its one label
            row["cost_label"], row["cost_meaning"] = row["label"], row["meaning"]


def _share_stage_costs(rows: list[dict], unit_pages: list[dict]) -> None:
    """The All view's stage costs (its cost CSV's stage columns): each row's shown cost split by
    the stage shares of the units the provider completed (stats.bars.workload_stage_costs)."""
    for row in rows:
        slug = row["provider"]
        unit_costs = [
            {s["stage"]: s["cost"] for s in r["stage_costs"]["segments"]}
            for page in unit_pages
            for r in page["cost_rows"]
            if r["provider"] == slug and r["stage_costs"]
        ]
        row["stage_costs"] = bars.workload_stage_costs(row["workload_cost_usd"], unit_costs)


def _workload_row(build: Build, provider: Provider, unit_pages, values, costs) -> shapes.SummaryRow:
    """A multi-unit workload's row: the workload value and cost over the provider's units."""
    slug = provider.slug
    failures = sum(
        r["unreplaced_failures"]
        for page in unit_pages
        for r in page["rows"]
        if r["provider"] == slug
    )
    floor = build.all_view_floors.get(slug)
    successes = build.totals.get(slug, 0)
    # Time is ranked by the rules for time alone: a missing provider-sourced cost only keeps the
    # provider off the Cost view's ranking, never off its times.
    status = labels.decide(build.state(provider, successes, failures, floor)).to_dict()
    sourced = provider_cost(provider) and build.cost_complete.get(slug, False)
    cost_state = build.state(
        provider,
        successes,
        failures,
        floor,
        view_needs_provider_cost=True,
        has_provider_cost=sourced,
    )
    cost_status = labels.decide(cost_state)
    value, cost = values.get(slug), costs.get(slug)
    return {
        **provider_info(provider, build.benchmark.clock),
        **status,
        **build.source(slug),
        "n": successes,
        "ranking_floor": floor,
        "workload_value": value.value if value and status["ranked"] else None,
        "substituted_units": [s.unit for s in value.substitutions] if value else [],
        "notes": [s.note for s in value.substitutions] if value else [],
        "cost_label": cost_status.to_dict()["label"],
        "cost_meaning": cost_status.meaning,
        "workload_cost_usd": cost.value if cost and cost_status.ranked else None,
        "cost_substituted_units": [s.unit for s in cost.substitutions] if cost else [],
        "cost_notes": [s.note for s in cost.substitutions] if cost else [],
    }


def _single_unit_row(build: Build, provider: Provider, unit_pages) -> shapes.SummaryRow:
    """A single-unit benchmark's row: its unit row's median, label and cost."""
    slug = provider.slug
    only = next((r for page in unit_pages for r in page["rows"] if r["provider"] == slug), None)
    if only is None:  # no unit page at all: nothing finished, only refusals
        only = {
            **labels.decide(build.state(provider, 0, 0)).to_dict(),
            "n": 0,
            "median": None,
            "mean_cost_usd": None,
        }
    return {
        **provider_info(provider, build.benchmark.clock),
        **build.source(slug),
        "label": only["label"],
        "meaning": only["meaning"],
        "ranked": only["ranked"],
        "n": only["n"],
        "ranking_floor": build.floors.get(slug),
        "workload_value": only["median"] if only["ranked"] else None,
        "substituted_units": [],
        "notes": [],
        # As on a multi-unit workload: a cost is shown only when the provider sources it.
        "workload_cost_usd": only["mean_cost_usd"]
        if only["ranked"] and provider_cost(provider)
        else None,
        "cost_substituted_units": [],
        "cost_notes": [],
    }
