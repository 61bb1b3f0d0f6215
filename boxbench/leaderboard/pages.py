"""The overview (score tree, composites, the run behind every benchmark) and the provider pages."""

from __future__ import annotations

from collections import Counter

from django.db.models import Count

from boxbench.leaderboard import shapes
from boxbench.leaderboard.boards import Board
from boxbench.leaderboard.burst import scored_unit
from boxbench.leaderboard.headlines import headlines
from boxbench.leaderboard.results import board_results
from boxbench.leaderboard.sources import run_source
from boxbench.leaderboard.states import provider_cost, provider_info
from boxbench.models import Direction, Outcome, Provider, Section, Trial
from stats import scores, workload


def _series_key(board: Board) -> tuple[str, str]:
    series = board.summary["job_host_series"]
    return series["type"], series["region"]


def overview_series(
    boards: list[Board],
) -> tuple[shapes.JobHostSeries | None, list[Board], list[Board]]:
    """The one job-host series the overview combines, its boards, and the boards of any other
    series. Each board states its own (type, region); results timed from job hosts of another
    type or region are never combined, so the overview takes the series most boards share (a tie
    goes to the newest publication) and names the other boards instead of scoring them."""
    votes: dict[tuple[str, str], list] = {}
    for board in boards:
        newest = max((run.published_at, str(run.id)) for run in board.runs.values())
        votes.setdefault(_series_key(board), []).append(newest)
    if not votes:
        return None, [], []
    chosen = max(votes, key=lambda key: (len(votes[key]), max(votes[key]), key))
    combined = [b for b in boards if _series_key(b) == chosen]
    others = [b for b in boards if _series_key(b) != chosen]
    return {"type": chosen[0], "region": chosen[1]}, combined, others


def overview_page(boards: list[Board], providers: dict[int, Provider]) -> shapes.OverviewPage:
    """The score tree with titles, composites, and the run behind every benchmark, over the boards
    of one job-host series (overview_series)."""
    series, combined, others = overview_series(boards)
    results = []
    for board in combined:
        benchmark = board.benchmark
        if not benchmark.charted:
            continue  # recorded without charting it, so it scores nothing either
        lower = benchmark.direction != Direction.HIGHER
        for unit in board.units:
            if not scored_unit(benchmark.slug, unit["unit"]):
                continue  # charted on its board, not scored (a burst tier but the default)
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
                    scores.UnitResult(
                        benchmark.section, benchmark.slug, unit["unit"], medians, lower
                    )
                )
    tree = scores.score_tree(results).to_dict()
    workloads = [b for b in combined if b.benchmark.section == Section.WORKLOAD]
    composite = {}
    for kind, field in (("time", "workload_value"), ("cost", "workload_cost_usd")):
        by_provider: dict[str, dict] = {}
        for board in workloads:
            for row in board.summary["rows"]:
                by_provider.setdefault(row["provider"], {})[board.benchmark.slug] = row[field]
        composite[kind] = workload.composites(by_provider) if workloads else {}
    return {
        "tree": tree,
        "providers": {p.slug: provider_info(p) for p in providers.values()},
        "benchmarks": {
            b.benchmark.slug: {
                "title": b.benchmark.title,
                "run": b.summary["run"],
                "run_name": b.summary["run_name"],
                "image_digest": b.summary["image_digest"],
                "sources": b.summary["sources"],
                "unit_scope": b.summary["unit_scope"],
                "provider_runs": {
                    slug: run_source(run, b.benchmark, [slug])
                    for slug, run in sorted(b.runs.items())
                },
                "units": {u["unit"]: u["unit_title"] for u in b.units},
                "results": board_results(b),
                "held_back": [r["provider"] for r in b.summary.get("held_back", [])],
            }
            for b in boards
        },
        "composites": composite,
        "headlines": headlines(combined),
        "job_host_series": series,
        "not_combined": [
            {
                "benchmark": b.benchmark.slug,
                "title": b.benchmark.title,
                "type": _series_key(b)[0],
                "region": _series_key(b)[1],
            }
            for b in others
        ],
    }


def _slug_cost(providers: dict[int, Provider], slug: str) -> bool:
    return any(p.slug == slug and provider_cost(p) for p in providers.values())


def reported_regions(provider: Provider, boards: list[Board]) -> list[shapes.ReportedRegion]:
    """The regions the provider's sandboxes reported (each trial's placement records it), over
    the successful trials of the runs its published numbers come from: where a provider chooses
    the region itself (Modal), this says where the numbers were timed."""
    counts: Counter[str] = Counter()
    for board in boards:
        run = board.runs.get(provider.slug)
        if run is None:
            continue
        found = (
            Trial.objects.filter(
                run=run, provider=provider, benchmark=board.benchmark, outcome=Outcome.SUCCESS
            )
            .values("placement__provider_region")
            .annotate(n=Count("id"))
        )
        for row in found:
            region = row["placement__provider_region"]
            if isinstance(region, str) and region.strip():
                counts[region.strip()[:64]] += row["n"]
    return [{"region": r, "trials": n} for r, n in sorted(counts.items(), key=lambda x: -x[1])]


def _withheld_result(board: Board, row: shapes.WithheldRow) -> shapes.ProviderResult:
    """A benchmark the audit held the provider's pair back on: its label, no number."""
    return {
        "benchmark": board.benchmark.slug,
        "title": board.benchmark.title,
        "measure_unit": board.benchmark.unit,
        "run": row["run"],
        "run_name": row["run_name"],
        "rank": None,
        "label": row["label"],
        "meaning": row["meaning"],
        "workload_value": None,
        "multi_unit": board.summary["multi_unit"],
        "unit_scope": board.summary["unit_scope"],
        "units": [
            {
                "unit": unit["unit"],
                "unit_title": unit["unit_title"],
                "rank": None,
                "label": row["label"],
                "meaning": row["meaning"],
                "n": 0,
                **dict.fromkeys(("median", "ci_low", "ci_high", "tail", "tail_kind", "mean")),
            }
            for unit in board.units
        ],
    }


def provider_page(
    provider: Provider, boards: list[Board], overview: shapes.OverviewPage
) -> shapes.ProviderPage:
    """Everything measured on one provider, with its declaration and pricing."""
    results = []
    probe_rows = []
    for board in boards:
        if "probes" in board.summary:  # what the sandbox is, shown beside the speed results
            probe_rows += [r for r in board.summary["probes"] if r["provider"] == provider.slug]
            continue
        summary = next((r for r in board.summary["rows"] if r["provider"] == provider.slug), None)
        withheld = [r for r in board.summary.get("held_back", []) if r["provider"] == provider.slug]
        if summary is None and withheld:
            results.append(_withheld_result(board, withheld[0]))
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
                        **{
                            k: row[k]
                            for k in (
                                "rank",
                                "label",
                                "meaning",
                                "n",
                                "median",
                                "ci_low",
                                "ci_high",
                                "tail",
                                "tail_kind",
                                "mean",
                            )
                        },
                    }
                )
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
                "unit_scope": board.summary["unit_scope"],
                "units": units,
            }
        )
    tree = overview["tree"]
    subsets = subset_notes(tree, boards)
    return {
        **provider_info(provider),
        "region": provider.region,
        "adapter": provider.adapter,
        "declaration": provider.declaration,
        "declaration_digest": provider.declaration_digest,
        "pricing": provider.pricing,
        "pricing_digest": provider.pricing_digest,
        "overall": {
            "score": tree["scores"].get(provider.slug),
            "rank": tree["ranks"].get(provider.slug),
            "subset_note": "; ".join(dict.fromkeys(n for n in subsets.values() if n)),
        },
        "sections": [
            {
                "label": s["label"],
                "score": s["scores"].get(provider.slug),
                "rank": s["ranks"].get(provider.slug),
                "subset_note": subsets.get(s["key"], ""),
            }
            for s in tree["children"]
        ],
        "results": results,
        "reported_regions": reported_regions(provider, boards),
        "probes": probe_rows,
    }


def subset_notes(tree: shapes.ScoreNode, boards: list[Board]) -> dict[str, str]:
    """{section key: "DeepSWE: 2 of 10 units"} for each section fed by a benchmark published
    over a subset of its units: a subset is labelled wherever its score is used."""
    scopes = {b.benchmark.slug: (b.benchmark.title, b.summary["unit_scope"]) for b in boards}
    notes = {}
    for section in tree["children"]:
        said = [
            f"{scopes[c['key']][0]}: {scopes[c['key']][1]['text']}"
            for c in section["children"]
            if c["key"] in scopes and scopes[c["key"]][1]["subset"]
        ]
        notes[section["key"]] = "; ".join(said)
    return notes
