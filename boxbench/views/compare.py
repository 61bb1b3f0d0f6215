"""Two providers side by side (/compare/?a=<slug>&b=<slug>, a benchmark's units with
&benchmark=<slug>[&page=N]) and its CSV: read from the pair's materialized page
(boxbench.leaderboard.comparisons), never computed per request, and cut to what the address shows
(boxbench.leaderboard.slices). The CSV holds every row."""

from urllib.parse import urlencode

from django.http import Http404
from django.shortcuts import render
from django.urls import reverse

from boxbench.leaderboard import slices
from boxbench.leaderboard.shapes import ComparePage, CompareRow, CompareSlice, ProviderInfo
from boxbench.models import Aggregate, Scope, aggregate_key
from boxbench.templatetags.boxbench_format import fixed, num, ticks
from boxbench.views import canonical, download_menu, tables
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


def comparable_providers() -> tuple[list[dict], tuple[str, str] | None]:
    """The providers a comparison can name, by name: those with a comparison page, that is with
    timed results (probe readings are not compared) beside another provider's; and the pair a
    bare /compare/ opens on, the first two by overall rank (then by name)."""
    # The two parts of the overview read, not the whole (every unit of every benchmark).
    overview = (
        Aggregate.objects.filter(scope=Scope.OVERVIEW, key=aggregate_key())
        .values_list("data__providers", "data__tree__ranks")
        .first()
    )
    if not overview:
        return [], None
    providers: dict[str, ProviderInfo] = overview[0]
    ranks: dict[str, int] = overview[1]
    keys = Aggregate.objects.filter(scope=Scope.COMPARE).values_list("key", flat=True)
    compared = {slug for key in keys for slug in key.split("/")}
    found = [info for slug, info in providers.items() if slug in compared]
    found.sort(key=lambda info: info["provider_name"])
    by_rank = sorted(
        found, key=lambda i: (ranks.get(i["provider"]) is None, ranks.get(i["provider"], 0))
    )
    first = (by_rank[0]["provider"], by_rank[1]["provider"]) if len(by_rank) > 1 else None
    return found, first


def chosen_slice(request, pair: tuple[str, str]) -> CompareSlice:
    """The part of the pair's comparison the address names (?benchmark=, ?page=); a 404 naming
    what the comparison lacks."""
    data: ComparePage = aggregate(Scope.COMPARE, *pair)
    number = canonical.whole_number(request, "page")
    try:
        return slices.cut_comparison(data, request.GET.get("benchmark", ""), number)
    except slices.NotOnPage as missing:
        raise Http404(str(missing)) from None


def address(pair: tuple[str, str], benchmark: str = "", page: int = 1) -> str:
    """The address of one part of a comparison, written as canonical.py keeps it."""
    query = [("a", pair[0]), ("b", pair[1])]
    if benchmark:
        query.append(("benchmark", benchmark))
    if page > 1:
        query.append(("page", str(page)))
    return reverse("compare") + "?" + urlencode(query)


def shown_rows(rows: list[CompareRow]) -> list[dict]:
    """The rows as the table shows them, each cell's text made here: a benchmark's page of 25
    units is some 150 rows, and the template's filters and {% url %} per cell (Decimal
    formatting, a reverse() per link) were most of its render."""
    links: dict[tuple[str, ...], str] = {}
    titles: dict[str, str] = {}

    def link(*args: str) -> str:
        if args not in links:
            links[args] = reverse("unit" if len(args) == 2 else "benchmark", args=args)
        return links[args]

    shown = []
    for r in rows:
        if r["unit_title"] not in titles:
            titles[r["unit_title"]] = ticks(r["unit_title"])
        shown.append(
            {
                **r,
                "benchmark_link": link(r["benchmark"]),
                "unit_link": link(r["benchmark"], r["unit"]),
                "unit_html": titles[r["unit_title"]],
                "median_a_text": num(r["median_a"]),
                "median_b_text": num(r["median_b"]),
                "ratio_text": fixed(r["ratio"], 2),
                "interval_text": f"{fixed(r['ci_low'], 2)} – {fixed(r['ci_high'], 2)}",
                "detectable_text": fixed(r["detectable_percent"], 0),
            }
        )
    return shown


def _pages_context(data: CompareSlice, pair: tuple[str, str]) -> dict:
    """Each benchmark's link to all its units, and for a benchmark's own page the units it shows
    and its neighbours' addresses."""
    context: dict = {
        "benchmarks": [{**b, "address": address(pair, b["benchmark"])} for b in data["benchmarks"]]
    }
    chosen = next((b for b in data["benchmarks"] if b["benchmark"] == data["benchmark"]), None)
    if chosen:
        first = (data["page"] - 1) * slices.UNITS_PER_PAGE + 1
        context["chosen"] = {
            **chosen,
            "first": first,
            "last": first + chosen["units_shown"] - 1,
            "previous": address(pair, chosen["benchmark"], data["page"] - 1)
            if data["page"] > 1
            else "",
            "next": address(pair, chosen["benchmark"], data["page"] + 1)
            if data["page"] < data["pages"]
            else "",
        }
    return context


def compare(request):
    pair = chosen_pair(request)
    if pair is None and ("benchmark" in request.GET or "page" in request.GET):
        raise Http404("a comparison needs two providers: ?a=<slug>&b=<slug>")
    providers, first = comparable_providers()
    # A bare /compare/ opens on the first two ranked providers rather than an empty form.
    pair = pair or first
    context = {"providers": providers, "page": None, "pair": pair}
    if pair:
        data = chosen_slice(request, pair)
        context.update(
            page=data,
            whole=address(pair),
            here=address(pair, data["benchmark"], data["page"]),
            swapped=address((pair[1], pair[0]), data["benchmark"], data["page"]),
            units_shown=slices.UNITS_SHOWN,
            downloads=download_menu.compare_menu(*pair),
            rows=shown_rows(data["rows"]),
            **_pages_context(data, pair),
        )
    return render(request, "boxbench/compare.html", context)


def compare_csv(request):
    pair = chosen_pair(request)
    if pair is None:
        raise Http404("a comparison needs two providers: ?a=<slug>&b=<slug>")
    data: ComparePage = aggregate(Scope.COMPARE, *pair)
    return csv_response(tables.compare_table(data), f"compare-{pair[0]}-{pair[1]}.csv")
