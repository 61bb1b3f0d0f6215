"""Two providers side by side (/compare/?a=<slug>&b=<slug>) and its CSV: read from the pair's
materialized page (boxbench.leaderboard.comparisons), never computed per request."""

from django.http import Http404
from django.shortcuts import render

from boxbench.leaderboard.shapes import ComparePage, OverviewPage
from boxbench.models import Aggregate, Scope
from boxbench.views import tables
from boxbench.views.access import aggregate
from boxbench.views.downloads import csv_response


def chosen_pair(request) -> tuple[str, str] | None:
    """The two providers the address names (?a= and ?b=), or None when it names neither."""
    a, b = request.GET.get("a", ""), request.GET.get("b", "")
    if not a and not b:
        return None
    if not a or not b:
        raise Http404("a comparison needs two providers: ?a=<slug>&b=<slug>")
    if a == b:
        raise Http404(f"a comparison needs two different providers, not {a!r} twice")
    return a, b


def comparable_providers() -> list[dict]:
    """The providers with published numbers, by name: those a comparison can name."""
    overview: OverviewPage | None = Aggregate.objects.page(Scope.OVERVIEW)
    if not overview:
        return []
    measured = {s for b in overview["benchmarks"].values() for s in b["provider_runs"]}
    found = [info for slug, info in overview["providers"].items() if slug in measured]
    return sorted(found, key=lambda info: info["provider_name"])


def compare(request):
    pair = chosen_pair(request)
    data: ComparePage | None = aggregate(Scope.COMPARE, *pair) if pair else None
    context = {"providers": comparable_providers(), "page": data, "pair": pair}
    if data:
        context["table"] = tables.compare_table(data)
    return render(request, "boxbench/compare.html", context)


def compare_csv(request):
    pair = chosen_pair(request)
    if pair is None:
        raise Http404("a comparison needs two providers: ?a=<slug>&b=<slug>")
    data: ComparePage = aggregate(Scope.COMPARE, *pair)
    return csv_response(tables.compare_table(data), f"compare-{pair[0]}-{pair[1]}.csv")
