"""The overview (score tree, composites, the run behind every benchmark) and the provider pages."""

from __future__ import annotations

from boxbench.leaderboard import shapes
from boxbench.leaderboard.boards import Board, provider_cost, provider_info
from boxbench.leaderboard.headlines import headlines
from boxbench.leaderboard.sources import run_source
from boxbench.models import Provider, Section
from stats import scores, workload


def overview_page(boards: list[Board], providers: dict[int, Provider]) -> shapes.OverviewPage:
    """The score tree with titles, composites, and the run behind every benchmark."""
    results = []
    for board in boards:
        benchmark = board.benchmark
        if not benchmark.charted:
            continue  # recorded without charting it, so it scores nothing either
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
                    scores.UnitResult(
                        benchmark.section, benchmark.slug, unit["unit"], medians, lower
                    )
                )
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
            }
            for b in boards
        },
        "composites": composite,
        "headlines": headlines(boards),
    }


def _slug_cost(providers: dict[int, Provider], slug: str) -> bool:
    return any(p.slug == slug and provider_cost(p) for p in providers.values())


def provider_page(
    provider: Provider, boards: list[Board], overview: shapes.OverviewPage
) -> shapes.ProviderPage:
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
                "units": units,
            }
        )
    tree = overview["tree"]
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
