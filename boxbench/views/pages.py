"""The leaderboard pages: benchmark, unit, provider and methodology (the overview: overview.py)."""

import functools
from pathlib import Path

from django.conf import settings
from django.db.models import Q
from django.http import Http404
from django.shortcuts import render
from django.urls import reverse

from boxbench import bundles, burst_charts, charts, history_charts, permissions
from boxbench.leaderboard.burst import default_unit
from boxbench.leaderboard.shapes import (
    BenchmarkPage,
    HistoryPage,
    ProviderPage,
    UnitPage,
)
from boxbench.models import (
    Aggregate,
    Benchmark,
    ClockGate,
    Outcome,
    Provider,
    Scope,
    Trial,
    aggregate_key,
)
from boxbench.public_catalog import declared_benchmarks, declared_providers
from boxbench.views import canonical, download_menu, tables
from boxbench.views.access import aggregate, chosen_view
from boxbench.views.awaiting import awaiting_runs, awaiting_uncached
from runner import host_price

TRIALS_PER_PAGE = 100
# Far beyond any run (a billion trials), and an OFFSET every database takes: a larger page
# number is a 404 before any query.
LAST_POSSIBLE_PAGE = 10_000_000


def benchmark(request, slug):
    summary: BenchmarkPage | None = Aggregate.objects.page(Scope.BENCHMARK, slug)
    if summary is None:
        return _benchmark_without_results(request, slug)
    if "probes" in summary:
        return _probe_page(request, summary)
    units = [u["slug"] for u in summary["units"]]
    chosen = request.GET.get("unit") or default_unit(slug, units) or units[0]
    if chosen not in units:
        raise Http404(f"benchmark {slug} has no unit {chosen!r}")
    # The unit and the history in one query: the page's budget is three.
    found = dict(
        Aggregate.objects.filter(
            Q(scope=Scope.UNIT, key=aggregate_key(slug, chosen)) | Q(scope=Scope.HISTORY, key=slug)
        ).values_list("scope", "data")
    )
    if Scope.UNIT not in found:
        raise Http404(f"nothing published for unit {chosen!r} of {slug!r}")
    unit: UnitPage = found[Scope.UNIT]
    history: HistoryPage | None = found.get(Scope.HISTORY)
    view = chosen_view(request, summary)
    query = "?view=cost" if view == "cost" else ""
    context = {
        "history_chart": history_charts.history_chart(history, chosen) if history else None,
        "changes": series_changes(history, unit=chosen) if history else [],
        "summary": summary,
        "unit": unit,
        "view": view,
        "csv_url": reverse("benchmark-csv", args=[slug]) + query,
        "unit_csv_url": reverse("unit-csv", args=[slug, chosen]) + query,
        "workload_empty": charts.nothing_to_chart(summary["rows"]),
        "downloads": download_menu.benchmark_menu(
            summary, chosen if summary["multi_unit"] else "", view
        ),
    }
    if view == "cost":
        shown = tables.cost_ordered(summary)
        context.update(
            summary_labels=shown["rows"],
            workload_empty=charts.nothing_to_chart(shown["rows"]),
            cost_hints=_cost_hints(summary) if request.user.is_staff else [],
            workload_chart=charts.workload_bars(shown, "cost") if summary["multi_unit"] else None,
            table=tables.benchmark_cost_table(summary),
            unit_table=tables.unit_cost_table(unit),
            cost_chart=charts.stacked_cost_bars(unit),
            cost_empty=charts.nothing_to_chart(unit["cost_rows"]),
        )
    else:
        context.update(
            summary_labels=summary["rows"],
            workload_chart=charts.workload_bars(summary) if summary["multi_unit"] else None,
            table=tables.benchmark_table(summary, unit),
            unit_table=tables.unit_table(unit),
            metric_chart=charts.metric_bars(unit),
            metric_empty=charts.nothing_to_chart(unit["rows"]),
            stage_chart=charts.stacked_stage_bars(unit),
            derived=_derived(unit),
        )
        if "limits" in summary:  # Burst and Density: limits, and Burst's curves and sweep
            context.update(burst_charts.burst_context(summary, chosen))
    context["plotly_bundle"] = bundles.for_page(context)
    return render(request, "boxbench/benchmark.html", context)


def _cost_hints(summary: BenchmarkPage) -> list[tuple[str, str]]:
    """For staff: which setting would price each self-hosted provider the Cost view leaves off.
    Operators' words, never a reader's, so never materialized into the public page."""
    return [
        (row["provider_name"], hint)
        for row in summary["rows"]
        if row.get("cost_rank") is None and (hint := host_price.setting_hint(row["provider"]))
    ]


def _probe_page(request, summary: BenchmarkPage):
    """A probe benchmark (Isolation): its readings per probe and provider, not a speed board."""
    if request.GET.get("view") == "cost":
        raise Http404("a probe benchmark has no Cost view")
    if request.GET.get("unit", summary["units"][0]["slug"]) != summary["units"][0]["slug"]:
        raise Http404(f"benchmark {summary['benchmark']} has no unit {request.GET['unit']!r}")
    context = {
        "summary": summary,
        "table": tables.probe_table(summary),
        "csv_url": reverse("benchmark-csv", args=[summary["benchmark"]]),
        "unit_url": reverse("unit", args=[summary["benchmark"], summary["units"][0]["slug"]]),
        "downloads": download_menu.benchmark_menu(summary, "", "time"),
    }
    return render(request, "boxbench/probes.html", context)


def series_changes(history: HistoryPage, unit: str = "", provider: str = "") -> list[dict]:
    """The changes between each series' two newest runs (on one unit, or of one provider),
    flagged ones first, each with its series' provider and image."""
    found = [
        {
            **change,
            "provider_name": series["provider_name"],
            "benchmark": history["benchmark"],
            "image_digest": series["image_digest"],
        }
        for series in history["series"]
        if not provider or series["provider"] == provider
        for change in series["changes"]
        if not unit or change["unit"] == unit
    ]
    return sorted(found, key=lambda c: (not c["flagged"], c["provider_name"], c["unit"]))


def _benchmark_without_results(request, slug):
    """A known benchmark nothing has been published for yet: say so (staff also see the runs
    that hold it); an unknown one is a 404."""
    known = list(Benchmark.objects.filter(slug=slug).order_by("-version"))
    reviewer = permissions.may(request, permissions.VIEW_UNPUBLISHED)
    # One only an unpublished run knows of is its reviewers' (boxbench/public_catalog.py).
    if not known or not (reviewer or slug in declared_benchmarks()):
        raise Http404(f"no benchmark {slug!r}")
    if "unit" in request.GET or "view" in request.GET:
        return canonical.redirect(request, unit=None, view=None)  # no units or views to choose
    context = {"benchmark": known[0]}
    if reviewer:
        context["awaiting"] = awaiting_runs([b.id for b in known])
    return awaiting_uncached(context, render(request, "boxbench/benchmark_empty.html", context))


def _derived(unit: UnitPage) -> dict | None:
    """What the derived-view widget needs: stages and the precomputed subset summaries."""
    if not unit["derived_available"]:
        return None
    rows = [
        {"provider": r["provider_name"], "views": r["derived"]}
        for r in unit["rows"]
        if r["derived"]
    ]
    if not rows:
        return None
    return {"stages": unit["stages"], "rows": rows, "lower_is_better": unit["lower_is_better"]}


def unit(request, slug, unit_slug):
    data: UnitPage = aggregate(Scope.UNIT, slug, unit_slug)
    provider = request.GET.get("provider", "")
    if provider and provider not in {row["provider"] for row in data["rows"]}:
        raise Http404(f"no provider {provider!r} has results on this unit")
    page = _page_number(request)
    # Unsuccessful trials, their owners, causes and replacement links are private evidence.
    evidence = permissions.may(request, permissions.VIEW_EVIDENCE)
    if not evidence and page > _last_page(data, provider):
        raise Http404(f"page {page} is beyond the last page of trials")
    trials, has_next = _trials_page(data, provider, page, evidence)
    if page > 1 and not trials:
        raise Http404(f"page {page} is beyond the last page of trials")
    context = {
        "unit": data,
        "table": tables.unit_table(data),
        "attempts": tables.attempts_table(data),
        "evidence": evidence,
        "distribution_chart": charts.distribution(data),
        "distribution_empty": "no provider has a successful trial on this unit.",
        "downloads": download_menu.unit_menu(data),
        "stage_chart": charts.stacked_stage_bars(data),
        "derived": _derived(data),
        "trials": trials,
        "provider_filter": provider,
        "page": page,
        "has_next": has_next,
    }
    context["plotly_bundle"] = bundles.for_page(context)
    return render(request, "boxbench/unit.html", context)


def _page_number(request) -> int:
    page = canonical.whole_number(request, "page")
    if not page <= LAST_POSSIBLE_PAGE:
        raise Http404(f"page must be between 1 and the last page, not {page}")
    return page


def _last_page(data: UnitPage, provider: str) -> int:
    """The last page a visitor's list of the unit's successful trials fills, from the counts
    materialized with the page: a page past it is refused before any query, whose OFFSET
    would make the database walk every row before it. (Those who see evidence also list
    trials the counts leave out, such as cancelled ones: their pages are checked by the query.)"""
    rows = [r for r in data["rows"] if not provider or r["provider"] == provider]
    count = sum(r["outcomes"].get(Outcome.SUCCESS, 0) for r in rows)
    return max(1, -(-count // TRIALS_PER_PAGE))


def _trials_page(
    data: UnitPage, provider: str, page: int, evidence: bool
) -> tuple[list[dict], bool]:
    """One page of the unit's trials (raw rows, not statistics) with the main metric and the
    clock-gate result, in one query: every trial with its outcome, owner, cause and replacement
    link for those who may see evidence, the successful ones only for everyone else."""
    if not data["cells"]:  # no provider's numbers published (every pair held back): no trial
        return [], False
    # Each provider's trials come from the run its numbers come from.
    cells = Q()
    for run_id, provider_id in data["cells"]:
        cells |= Q(run_id=run_id, provider_id=provider_id)
    trials = Trial.objects.filter(
        cells, benchmark_id=data["benchmark_id"], unit_id=data["unit_id"]
    ).order_by("seq")
    if provider:
        trials = trials.filter(provider__slug=provider)
    fields = [
        "id",
        "run_id",
        "seq",
        "round",
        "attempt",
        "provider__slug",
        "outcome",
        "metrics",
        "clock_gates",
    ]
    if evidence:
        fields += ["owner", "cause", "replaces_id"]
    else:
        trials = trials.filter(outcome=Outcome.SUCCESS)
    start = (page - 1) * TRIALS_PER_PAGE
    rows = list(trials.values(*fields)[start : start + TRIALS_PER_PAGE + 1])
    # A trial's number as a reader counts: its position in its run (1..N in execution order),
    # not the seq, which starts each provider's chain at a block of its own (1000001, ...).
    positions = {}
    for run_id in {row["run_id"] for row in rows}:
        seqs = [row["seq"] for row in rows if row["run_id"] == run_id]
        positions[run_id] = Trial.objects.positions(run_id, seqs)
    for row in rows:
        row["position"] = positions[row["run_id"]][row["seq"]]
        row["value"] = row.pop("metrics").get(data["metric"])
        gates = [g for group in (row.pop("clock_gates") or {}).values() for g in group.values()]
        if ClockGate.FAIL in gates:
            row["clock_gate"] = "fail (stepped clock)"
        elif ClockGate.PASS in gates:
            row["clock_gate"] = "pass"
        else:
            row["clock_gate"] = "not guest-timed"
    return rows[:TRIALS_PER_PAGE], len(rows) > TRIALS_PER_PAGE


def provider(request, slug):
    data: ProviderPage | None = Aggregate.objects.page(Scope.PROVIDER, slug)
    if data is None:
        # A provider added since the last publication: its declaration, nothing measured yet.
        # One only an unpublished run knows of is not shown (boxbench/public_catalog.py).
        found = Provider.objects.filter(slug=slug).first()
        if found is None or slug not in declared_providers():
            raise Http404(f"no provider {slug!r}")
        data = {
            "provider": found.slug,
            "provider_name": found.name,
            "region": found.region,
            "region_marker": found.region_marker,
            "region_note": found.region_note,
            "colour_index": found.pk - 1,
            "adapter": found.adapter,
            "declaration": found.declaration,
            "declaration_digest": found.declaration_digest,
            "pricing": found.pricing,
            "pricing_digest": found.pricing_digest,
            "overall": {},
            "sections": [],
            "results": [],
            "reported_regions": [],
        }
    # Reversing three URLs for each of hundreds of unit rows cost more than the rest of the
    # page: reverse once per benchmark; a unit's address is "<benchmark url>units/<unit>/".
    for result in data["results"]:
        result["url"] = reverse("benchmark", args=[result["benchmark"]])
        result["run_url"] = reverse("run", args=[result["run"]])
    histories = Aggregate.objects.filter(scope=Scope.HISTORY).values_list("data", flat=True)
    changes = [c for h in histories for c in series_changes(h, provider=slug)]
    changes.sort(key=lambda c: not c["flagged"])  # flagged first, each benchmark's order kept
    context = {"p": data, "changes": changes, "downloads": download_menu.provider_menu(data)}
    return render(request, "boxbench/provider.html", context)


@functools.cache
def _methodology_html(path: str, mtime: float) -> str:
    import markdown

    text = Path(path).read_text(encoding="utf-8")
    # [TOC] in the file: the second-level headings, the page's table of contents.
    return markdown.markdown(
        text,
        extensions=["tables", "fenced_code", "toc"],
        extension_configs={"toc": {"toc_depth": "2-2"}},
    )


def _methodology_path() -> Path:
    return Path(settings.BASE_DIR) / "docs" / "methodology.md"


def methodology_version(request) -> str:
    """What the cached methodology page depends on besides publications: its file's version."""
    try:
        return str(_methodology_path().stat().st_mtime_ns)
    except FileNotFoundError:
        return "none"


def methodology(request):
    path = _methodology_path()
    try:
        html = _methodology_html(str(path), path.stat().st_mtime)
    except FileNotFoundError:
        html = ""
    return render(request, "boxbench/methodology.html", {"html": html})
