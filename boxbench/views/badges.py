"""An SVG badge per provider and benchmark (/providers/<slug>/<benchmark>.svg) that a README can
embed: the provider's value on the benchmark and its rank, read from the benchmark's materialized
page and cached per publication like the pages."""

from django.http import Http404, HttpResponse
from django.template.loader import render_to_string

from boxbench.leaderboard.shapes import BenchmarkPage
from boxbench.models import Scope
from boxbench.templatetags.boxbench_format import num
from boxbench.views.access import aggregate

CHAR_PX = 6.8  # the width of one character at the badge's 11 px font, generously
PAD_PX = 12
COLOURS = {"ranked": "#2e7d32", "unranked": "#757575"}


def badge_text(summary: BenchmarkPage, provider: str) -> tuple[str, bool]:
    """What the badge says about `provider` on the benchmark: its value and rank, or its label."""
    row = next((r for r in summary["rows"] if r["provider"] == provider), None)
    withheld = summary.get("held_back", [])
    if row is None and any(r["provider"] == provider for r in withheld):
        return "held back by the audit", False
    if row is None:
        raise Http404(f"provider {provider!r} has nothing published on {summary['benchmark']!r}")
    ranked = sum(1 for r in summary["rows"] if r["rank"] is not None)
    if row["rank"] is None or row["workload_value"] is None:
        return row["label"] or "not ranked", False
    value = f"{num(row['workload_value'])} {summary['measure_unit']}"
    if withheld:
        # Never "#1 of 1" while a measured competitor is withheld.
        return f"{value} · #{row['rank']} · {len(withheld)} held back", True
    return f"{value} · #{row['rank']} of {ranked}", True


def badge(request, slug, benchmark):
    summary: BenchmarkPage = aggregate(Scope.BENCHMARK, benchmark)
    value, ranked = badge_text(summary, slug)
    label = f"boxbench {summary['title']}"
    left = round(len(label) * CHAR_PX + PAD_PX)
    right = round(len(value) * CHAR_PX + PAD_PX)
    svg = render_to_string(
        "boxbench/badge.svg",
        {
            "label": label,
            "value": value,
            "left": left,
            "right": right,
            "width": left + right,
            "label_x": left / 2,
            "value_x": left + right / 2,
            "colour": COLOURS["ranked" if ranked else "unranked"],
        },
    )
    return HttpResponse(svg, content_type="image/svg+xml; charset=utf-8")
