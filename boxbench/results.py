"""Published results: the audit, publishing, and the aggregates the dashboard reads.

Publishing materializes every number a page shows (medians, intervals, tails, stage bars, derived
views, workload values, scores, ranks, labels) into Aggregate rows, so requests never recompute
statistics. The data flows ORM -> pandas -> stats -> Aggregate rows.

Which runs feed the leaderboards: for each benchmark, the latest published run that holds trials
of it. Every aggregate names the run (and image digest) its numbers come from.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from boxbench.models import (
    Aggregate,
    AuditResolution,
    Benchmark,
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


class PublishRefused(Exception):
    """Publishing (or resolving) is not allowed yet; the message says what is in the way."""


# ---------------------------------------------------------------------------------------------
# The audit


def audit_frame(run: Run) -> pd.DataFrame:
    """One row per successful trial and main metric, in the columns stats.audit expects."""
    rows = (
        Trial.objects.filter(run=run, outcome=Outcome.SUCCESS)
        .filter(measurements__kind=MeasurementKind.METRIC)
        .values_list(
            "id",
            "provider__slug",
            "benchmark__slug",
            "benchmark__metric",
            "benchmark__direction",
            "benchmark__steps_include_create_or_build",
            "seq",
            "round",
            "batch",
            "started_at",
            "ended_at",
            "in_flight",
            "placement",
            "host_load",
            "measurements__name",
            "measurements__value",
        )  # fmt: skip
    )
    records = []
    for (
        trial_id, provider, benchmark, metric, direction, builds, seq, rnd, batch, started,
        ended, in_flight, placement, host_load, name, value,
    ) in rows:  # fmt: skip
        if name != metric or value is None:
            continue
        facts = {**(placement or {}), **(host_load or {})}
        record = {
            "provider": provider,
            "benchmark": benchmark,
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
        }
        for fact in stats_audit.FLOAT_FACTS + ("cpu_model",):
            if fact not in record and fact in facts:
                record[fact] = facts[fact]
        records.append(record)
    columns = list(stats_audit.REQUIRED)
    return pd.DataFrame.from_records(records) if records else pd.DataFrame(columns=columns)


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


def leaderboard_runs() -> dict[int, Run]:
    """For each benchmark id, the latest published run holding trials of it."""
    chosen: dict[int, Run] = {}
    for run in Run.objects.published().order_by("-published_at"):
        ids = Trial.objects.filter(run=run).values_list("benchmark_id", flat=True).distinct()
        for benchmark_id in ids:
            chosen.setdefault(benchmark_id, run)
    return chosen


def image_digest(manifest: dict, benchmark: str) -> str:
    """The image digest a benchmark ran on, as the run manifest records it."""
    digests = manifest.get("image_digests")
    if isinstance(digests, dict):
        return str(digests.get(benchmark) or digests.get("standard") or "")
    return str(manifest.get("image_digest") or "")


def materialize() -> int:
    """Recompute every Aggregate row from the leaderboard runs; all rows replaced at once."""
    runs = leaderboard_runs()
    benchmarks = Benchmark.objects.filter(id__in=runs).order_by("section", "slug")
    providers = {p.id: p for p in Provider.objects.all()}
    rows: list[Aggregate] = []
    boards = []
    for benchmark in benchmarks:
        board = _benchmark_board(benchmark, runs[benchmark.id], providers)
        boards.append(board)
        rows.append(Aggregate(scope="benchmark", key=benchmark.slug, data=board.summary))
        for unit_data in board.units:
            key = f"{benchmark.slug}/{unit_data['unit']}"
            rows.append(Aggregate(scope="unit", key=key, data=unit_data))
    for run in {r.id: r for r in runs.values()}.values():
        data = {"progress": progress(run), "resolutions": resolutions(run)}
        rows.append(Aggregate(scope="run", key=str(run.id), data=data))
    overview = _overview(boards, providers)
    rows.append(Aggregate(scope="overview", key="", data=overview))
    for provider in providers.values():
        data = _provider_page(provider, boards, overview)
        rows.append(Aggregate(scope="provider", key=provider.slug, data=data))
    with transaction.atomic():
        Aggregate.objects.all().delete()
        Aggregate.objects.bulk_create(rows)
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
    run: Run
    summary: dict  # the benchmark page
    units: list[dict]  # one per unit page


def _num(value):
    """JSON-safe float: None for missing or non-finite values."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _load_trials(run: Run, benchmark: Benchmark) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The benchmark's finished trials of the run, and the measurements of its successes."""
    trials = pd.DataFrame.from_records(
        Trial.objects.filter(run=run, benchmark=benchmark, state=TrialState.DONE).values_list(
            "id", "unit_id", "provider_id", "outcome", "cost_usd", "replaces_id"
        ),
        columns=["trial", "unit", "provider", "outcome", "cost_usd", "replaces"],
    )
    measurements = pd.DataFrame.from_records(
        Trial.objects.filter(run=run, benchmark=benchmark, outcome=Outcome.SUCCESS)
        .filter(measurements__isnull=False)
        .values_list("id", "measurements__kind", "measurements__name", "measurements__value"),
        columns=["trial", "kind", "name", "value"],
    )
    return trials, measurements


def _refusals(run: Run, benchmark: Benchmark) -> dict[str, dict]:
    """The planner's refusals of this benchmark, by provider slug."""
    found = {}
    for refusal in run.manifest.get("refusals", []) or []:
        if isinstance(refusal, dict) and refusal.get("benchmark") == benchmark.slug:
            found[str(refusal.get("provider", ""))] = refusal
    return found


def _benchmark_board(benchmark: Benchmark, run: Run, providers: dict[int, Provider]) -> Board:
    trials, measurements = _load_trials(run, benchmark)
    units = list(Unit.objects.filter(id__in=set(trials["unit"])).order_by("slug"))
    refusals = _refusals(run, benchmark)
    in_run = [providers[i] for i in sorted(set(trials["provider"]))]
    refused = [p for p in providers.values() if p.slug in refusals and p not in in_run]
    lower = benchmark.direction != "higher"
    stages = [s for s in benchmark.stage_names if isinstance(s, str)]
    metric = measurements[
        (measurements["kind"] == MeasurementKind.METRIC)
        & (measurements["name"] == benchmark.metric)
    ].set_index("trial")["value"]
    stage_values = (
        measurements[measurements["kind"] == MeasurementKind.STAGE]
        .pivot_table(index="trial", columns="name", values="value", aggfunc="first")
        .reindex(columns=stages)
    )
    replaced = set(trials["replaces"].dropna())
    unit_floor = math.ceil(benchmark.ranking_floor / max(1, len(units)))
    digest = image_digest(run.manifest, benchmark.slug)
    context = {
        "benchmark": benchmark.slug,
        "benchmark_title": benchmark.title,
        "run": str(run.id),
        "run_name": run.name,
        "image_digest": digest,
        "metric": benchmark.metric,
        "measure_unit": benchmark.unit,
        "lower_is_better": lower,
        "stages": stages,
    }
    unit_pages = []
    per_unit_median: dict[str, dict[str, float | None]] = {}
    per_unit_cost: dict[str, dict[str, float | None]] = {}
    totals: dict[str, dict] = {}
    for unit in units:
        unit_trials = trials[trials["unit"] == unit.id]
        rows = []
        for provider in in_run + refused:
            cell = unit_trials[unit_trials["provider"] == provider.id]
            success = cell[cell["outcome"] == Outcome.SUCCESS]
            values = metric.reindex(success["trial"]).dropna().to_numpy(dtype=float)
            failures = cell[
                (cell["outcome"] == Outcome.PROVIDER_FAILURE) & ~cell["trial"].isin(replaced)
            ]
            row = _unit_row(
                provider, values, stage_values.reindex(success["trial"]), stages, lower,
                cell["outcome"].value_counts().to_dict(), len(failures),
            )  # fmt: skip
            costs = success["cost_usd"].dropna().to_numpy(dtype=float)
            row["mean_cost_usd"] = _num(costs.mean()) if costs.size == len(success) > 0 else None
            state = _state(provider, refusals, row["n"], unit_floor, len(failures))
            row.update(labels.decide(state).to_dict())
            rows.append(row)
            total = totals.setdefault(provider.slug, {"n": 0, "failures": 0, "costs": True})
            total["n"] += row["n"]
            total["failures"] += len(failures)
            if row["n"] and row["mean_cost_usd"] is None:
                total["costs"] = False
            ranked = row["ranked"]
            per_unit_median.setdefault(provider.slug, {})[unit.slug] = (
                row["median"] if ranked else None
            )
            per_unit_cost.setdefault(provider.slug, {})[unit.slug] = (
                row["mean_cost_usd"] if ranked and _provider_cost(provider) else None
            )
        _rank_rows(rows, "median", lower)
        unit_pages.append(
            {
                **context,
                "unit": unit.slug,
                "unit_title": unit.title or unit.slug,
                # Internal keys for the trials table's query (trial_cell_idx); never in a URL.
                "benchmark_id": benchmark.id,
                "unit_id": unit.id,
                "unit_digest": unit.digest,
                "trial_count": len(unit_trials),
                "derived_available": 0 < len(stages) <= MAX_DERIVED_STAGES,
                "ranking_floor": unit_floor,
                "rows": rows,
            }
        )
    summary = _benchmark_summary(
        benchmark, run, context, units, unit_pages, in_run + refused, refusals, totals,
        per_unit_median, per_unit_cost,
    )  # fmt: skip
    return Board(benchmark, run, summary, unit_pages)


def _provider_cost(provider: Provider) -> bool:
    return bool((provider.pricing or {}).get("provider_sourced"))


def _state(provider, refusals, successes, floor, failures) -> labels.ProviderState:
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
    )


def _provider_info(provider: Provider) -> dict:
    return {
        "provider": provider.slug,
        "provider_name": provider.name,
        "region_marker": provider.region_marker,
        "region_note": provider.region_note,
    }


def _unit_row(provider, values, stage_frame, stages, lower, outcomes, failures) -> dict:
    """Every statistic of one provider on one unit, from its successful trials."""
    row = {
        **_provider_info(provider),
        "n": int(values.size),
        "outcomes": {str(k): int(v) for k, v in outcomes.items()},
        "unreplaced_failures": int(failures),
        "median": None, "ci_low": None, "ci_high": None, "tail": None, "tail_kind": None,
        "mean": None, "stage_medians": {}, "segments": [], "scale": None, "distribution": None,
        "derived": {},
    }  # fmt: skip
    if values.size == 0:
        return row
    ci_low, ci_high = estimators.bootstrap_median_ci(values)
    tail, tail_kind = estimators.tail(values, lower)
    row.update(
        median=estimators.median(values),
        ci_low=ci_low,
        ci_high=ci_high,
        tail=tail,
        tail_kind=tail_kind,
        mean=estimators.mean(values),
        distribution=_distribution(values),
    )
    recorded = [s for s in stages if stage_frame[s].notna().any()]
    if recorded:
        columns = {s: stage_frame[s].tolist() for s in recorded}
        bar = bars.stacked_bar(values, columns)
        row["stage_medians"] = {s.stage: s.median for s in bar.segments}
        row["segments"] = [
            {"stage": s.stage, "median": s.median, "width": s.width} for s in bar.segments
        ]
        row["scale"] = bar.scale
        if len(stages) <= MAX_DERIVED_STAGES:
            row["derived"] = _derived_views(columns, recorded, lower)
    return row


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
    benchmark, run, context, units, unit_pages, providers, refusals, totals, medians, costs
) -> dict:
    multi = len(units) > 1
    lower = benchmark.direction != "higher"
    values = workload.workload_values(medians, "time") if multi and lower else {}
    cost_values = workload.workload_values(costs, "cost") if multi else {}
    rows = []
    for provider in providers:
        total = totals.get(provider.slug, {"n": 0, "failures": 0, "costs": False})
        if multi:
            state = _state(
                provider, refusals, total["n"], benchmark.ranking_floor, total["failures"]
            )
            state = labels.ProviderState(
                **{
                    **state.__dict__,
                    "view_needs_provider_cost": True,
                    "has_provider_cost": _provider_cost(provider) and total["costs"],
                }
            )
            status = labels.decide(state).to_dict()
            value = values.get(provider.slug)
            row = {
                **_provider_info(provider),
                **status,
                "n": total["n"],
                "workload_value": value.value if value and status["ranked"] else None,
                "substituted_units": [s.unit for s in value.substitutions] if value else [],
                "notes": [s.note for s in value.substitutions] if value else [],
            }
            cost = cost_values.get(provider.slug)
            row["workload_cost_usd"] = cost.value if cost and status["ranked"] else None
        else:
            only = next(r for r in unit_pages[0]["rows"] if r["provider"] == provider.slug)
            row = {
                **_provider_info(provider),
                "label": only["label"],
                "meaning": only["meaning"],
                "ranked": only["ranked"],
                "n": only["n"],
                "workload_value": only["median"] if only["ranked"] else None,
                "substituted_units": [],
                "notes": [],
                "workload_cost_usd": only["mean_cost_usd"] if only["ranked"] else None,
            }
        rows.append(row)
    _rank_rows(rows, "workload_value", lower)
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
        "ranking_floor": benchmark.ranking_floor,
        "published_at": run.published_at.isoformat() if run.published_at else None,
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
                "run": str(b.run.id),
                "run_name": b.run.name,
                "image_digest": b.summary["image_digest"],
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
                "run": str(board.run.id),
                "run_name": board.run.name,
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
