"""Every leaderboard page rebuilt from the published runs and stored at once."""

from __future__ import annotations

from boxbench import holdbacks, public_catalog
from boxbench.leaderboard import (
    burst,
    caveats,
    probes,
    reliability,
    rollouts,
    shapes,
    stored,
    unscored,
    verdicts,
    withheld,
    workload_verdicts,
)
from boxbench.leaderboard.boards import benchmark_board
from boxbench.leaderboard.comparisons import compare_pages
from boxbench.leaderboard.history import history_pages
from boxbench.leaderboard.names import pair_names
from boxbench.leaderboard.pages import overview_page, provider_page
from boxbench.leaderboard.shapes.reliability import ReliabilityPage
from boxbench.leaderboard.sources import leaderboard_sources
from boxbench.models import Aggregate, Benchmark, Provider, Run, Scope, aggregate_key


def materialize() -> int:
    """Recompute every Aggregate row from the leaderboard sources; all rows replaced at once."""
    published = list(Run.objects.published().order_by("-published_at", "-id"))
    # Asked once: it decides both which run feeds each pair and what each run's page holds back.
    held = holdbacks.held_back(published)
    stored.store_pairs(published)
    reliability.store_counts(published)
    sources = leaderboard_sources(published, held)
    benchmarks = Benchmark.objects.filter(id__in=sources).order_by("section", "slug")
    # A provider only an unpublished run knows of is on no page (nor feed, nor API answer).
    public = public_catalog.public_providers(published)
    providers = {p.id: p for p in Provider.objects.filter(slug__in=public)}
    rows: list[Aggregate] = []
    boards = []
    for benchmark in benchmarks:
        board = benchmark_board(benchmark, sources[benchmark.id], providers, published)
        if probes.is_probe(board):
            board.summary["probes"] = probes.probe_rows(board, providers)
        board.summary["held_back"] = withheld.held_back_rows(board, held, published, providers)
        for unit_page in board.units:  # a row in every unit's tables too
            unit_page["held_back"] = board.summary["held_back"]
        board.summary["caveats"] = caveats.board_caveats(board, providers)
        if board.benchmark.slug in burst.LIMITED_BOARDS:
            burst.add_charts(board, providers)
        boards.append(board)
    rollouts.add_projection(boards, providers)
    # Probe readings are facts, not timings: nothing to compare or to follow across runs.
    timed = [board for board in boards if not probes.is_probe(board)]
    # Every pair of providers, both orders: few providers, and a page read is then one row. The
    # boards' verdicts between adjacent ranks are read from them, so they come first.
    compared = compare_pages(timed, providers)
    verdicts.add_verdicts(timed, compared)
    workload_verdicts.add_workload_verdicts(timed, providers)
    # A benchmark whose every pair is held back keeps its pages, each provider a held-back row;
    # with no number it feeds no score, comparison or history.
    all_held = withheld.withheld_boards(published, held, sources, providers)
    for board in boards + all_held:
        rows.append(_page(Scope.BENCHMARK, board.benchmark.slug, data=board.summary))
        for unit_data in board.units:
            unit = unit_data["unit"]
            rows.append(_page(Scope.UNIT, board.benchmark.slug, unit, data=unit_data))
    # Every published run has its page, also one whose every pair is held back or superseded.
    progress = stored.progress_of(published)
    resolutions = holdbacks.resolutions_by_run(published)
    reruns = holdbacks.rerun_links_by_run(published)
    names = pair_names()
    for run in published:
        data: shapes.RunPage = {
            "cells": progress[run.id],
            "resolutions": resolutions.get(run.id, []),
            "held_back": held.get(run.id, []),
            "reruns": reruns.get(run.id, []),
            "names": names,
        }
        rows.append(_page(Scope.RUN, run.id, data=data))
    failures = reliability.reliability_page(published, providers)
    rows.append(_page(Scope.RELIABILITY, data=failures))
    rates = reliability.provider_rates(failures)
    overview = overview_page(boards, providers)
    overview["lead"] = verdicts.lead(overview, boards, all_held)
    overview["section_notes"] = unscored.section_notes(overview["tree"])
    overview["all_held_back"] = [
        {
            "benchmark": board.benchmark.slug,
            "title": board.benchmark.title,
            "providers": [r["provider_name"] for r in board.summary["held_back"]],
        }
        for board in all_held
    ]
    overview["reliability"] = rates
    rows.append(_page(Scope.OVERVIEW, data=overview))
    for provider in providers.values():
        data = provider_page(provider, boards + all_held, overview)
        if provider.slug in rates:
            data["reliability"] = rates[provider.slug]
        rows.append(_page(Scope.PROVIDER, provider.slug, data=data))
    stored.store_points(timed, published, providers)
    for (a, b), data in compared.items():
        rows.append(_page(Scope.COMPARE, a, b, data=data))
    # "Other benchmarks record it without charting it" (Destroy): no history chart, no changes.
    charted = [board for board in timed if board.benchmark.charted]
    for slug, data in history_pages(charted, published, held, providers).items():
        rows.append(_page(Scope.HISTORY, slug, data=data))
    Aggregate.objects.replace_all(rows)
    return len(rows)


# The shape each scope's page is checked against before it is stored.
SHAPES = {
    Scope.OVERVIEW: shapes.OverviewPage,
    Scope.BENCHMARK: shapes.BenchmarkPage,
    Scope.UNIT: shapes.UnitPage,
    Scope.PROVIDER: shapes.ProviderPage,
    Scope.RUN: shapes.RunPage,
    Scope.COMPARE: shapes.ComparePage,
    Scope.HISTORY: shapes.HistoryPage,
    Scope.RELIABILITY: ReliabilityPage,
}


def _page(scope: Scope, *parts, data) -> Aggregate:
    where = f"the {scope} page {aggregate_key(*parts)!r}".replace(" ''", "")
    return Aggregate.of(scope, *parts, data=shapes.check(SHAPES[scope], data, where))
