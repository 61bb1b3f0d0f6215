"""The index pages the breadcrumbs name: published runs (newest first, a page at a time), the
providers and the benchmarks. They read what publication materialized; an unpublished run never
appears here, whoever asks."""

from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404
from django.shortcuts import render

from boxbench.models import Aggregate, Provider, Run, Scope, Section
from boxbench.public_catalog import declared_providers
from boxbench.views import canonical

RUNS_PER_PAGE = 25


def runs(request):
    number = canonical.whole_number(request, "page")
    pages = Paginator(Run.objects.published().order_by("-published_at", "-id"), RUNS_PER_PAGE)
    if number > max(pages.num_pages, 1):
        raise Http404(f"page {number} is beyond the last page of published runs")
    page = pages.page(number)
    stored = dict(
        Aggregate.objects.filter(
            scope=Scope.RUN, key__in=[str(run.id) for run in page.object_list]
        ).values_list("key", "data")
    )
    rows = [_run_row(run, stored.get(str(run.id))) for run in page.object_list]
    return render(request, "boxbench/runs.html", {"page": page, "rows": rows})


def _run_row(run: Run, data: dict | None) -> dict:
    """One published run as the list shows it (`data`: its RunPage): its size from the counts
    stored at publication."""
    cells = [c for c in (data or {}).get("cells", []) if "refusal" not in c]
    rerun_of = run.typed_manifest.rerun_of
    return {
        "run": run,
        "trials": sum(c.get("done", 0) + c.get("failures", 0) for c in cells),
        "successes": sum(c.get("outcomes", {}).get("success", 0) for c in cells),
        "providers": sorted({c.get("provider", "") for c in cells}),
        "benchmarks": len({c.get("benchmark", "") for c in cells}),
        "held_back": len((data or {}).get("held_back", [])),
        "rerun_of": f"{rerun_of.provider} / {rerun_of.benchmark}" if rerun_of else "",
    }


def providers(request):
    overview = Aggregate.objects.page(Scope.OVERVIEW)  # an OverviewPage
    scores = overview["tree"]["scores"] if overview else {}
    ranks = overview["tree"]["ranks"] if overview else {}
    # Those with a page (the code's, and those of published runs) or declared since.
    paged = Aggregate.objects.filter(scope=Scope.PROVIDER).values_list("key", flat=True)
    listed = Provider.objects.filter(Q(slug__in=paged) | Q(slug__in=declared_providers()))
    found = sorted(
        listed,
        key=lambda p: (p.slug not in ranks, ranks.get(p.slug, 0), p.name),
    )
    rows = [{"provider": p, "score": scores.get(p.slug), "rank": ranks.get(p.slug)} for p in found]
    example = _badge_example(overview)
    return render(request, "boxbench/providers.html", {"rows": rows, "example": example})


def _badge_example(overview: dict | None) -> dict | None:
    """A real badge address to show: a provider with results on the first benchmark."""
    if not overview:
        return None
    for slug, benchmark in overview["benchmarks"].items():
        for provider in benchmark["provider_runs"]:
            return {"provider": provider, "benchmark": slug, "title": benchmark["title"]}
    return None


def benchmarks(request):
    found = Aggregate.objects.filter(scope=Scope.BENCHMARK).values_list("data", flat=True)
    sections: dict[str, list[dict]] = {}
    order = {section: i for i, section in enumerate(Section.values())}
    for data in sorted(found, key=lambda d: (order.get(d["section"], len(order)), d["title"])):
        sections.setdefault(data["section_label"], []).append(
            {
                "slug": data["benchmark"],
                "title": data["title"],
                "measure_unit": data["measure_unit"],
                "lower_is_better": data["lower_is_better"],
                "units": data["unit_scope"]["text"],
                "providers": sum(1 for r in data["rows"] if r["n"]),
                "ranked": sum(1 for r in data["rows"] if r["rank"] is not None),
                "held_back": len(data.get("held_back", [])),
                "published_at": data["published_at"][:10],
            }
        )
    return render(request, "boxbench/benchmarks.html", {"sections": sections})
