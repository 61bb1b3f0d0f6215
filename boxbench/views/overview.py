"""The overview page: the lead, the score tree with every provider's column, the composites."""

from typing import Any, cast

from django.shortcuts import render

from boxbench import bundles, charts, permissions
from boxbench.leaderboard.shapes import OverviewPage, SectionNotes
from boxbench.models import Aggregate, Scope
from boxbench.views import download_menu, score_tables
from boxbench.views.awaiting import awaiting_runs, awaiting_uncached

COMPOSITE_BLANKS = {
    "blank_time": "No composite time: the provider lacks a ranked value on some workload.",
    "blank_cost": "No composite cost: it needs a provider-sourced cost on every workload; a "
    "self-hosted provider (local, docker, remote-docker) has no provider price.",
}


def overview(request):
    data = cast("OverviewPage | None", Aggregate.objects.page(Scope.OVERVIEW))
    context: dict[str, Any] = {"overview": data}
    if not data and permissions.may(request, permissions.VIEW_UNPUBLISHED):
        context["awaiting"] = awaiting_runs()
    if data:
        rows = score_tables.score_rows(data)
        columns = [p for p, _, _ in rows[0]["ranking"]]
        context["columns"] = [data["providers"].get(p, {"provider_name": p}) for p in columns]
        context["score_rows"] = _tree_rows(rows, columns)
        subsets = _subset_notes(data)
        held = {slug: b.get("held_back", []) for slug, b in data["benchmarks"].items()}
        # Pages materialized before the notes existed have none.
        notes: SectionNotes = data.get("section_notes") or {"unscored": {}, "overall": ""}
        for row in context["score_rows"]:
            row["subset_note"] = subsets.get(row["path"], "")
            if row["level"] == "section":  # one sentence across a section nobody scored
                row["unscored"] = notes["unscored"].get(row["key"], "")
            elif row["level"] == "overall":
                row["overall_note"] = notes["overall"]
            if row["level"] == "benchmark":  # a held-back pair is said, not a silent blank
                withheld = held.get(row["benchmark"], [])
                row["cells"] = [
                    HELD_BACK_CELL if cell is None and p in withheld else cell
                    for p, cell in zip(columns, row["cells"], strict=True)
                ]
        context["composite_rows"] = _composite_rows(data)
        context.update(COMPOSITE_BLANKS)
        context["composite_blank_time"] = any(r["time"] is None for r in context["composite_rows"])
        context["composite_blank_cost"] = any(r["cost"] is None for r in context["composite_rows"])
        context["score_chart"] = charts.score_chart(data)
        context["downloads"] = download_menu.overview_menu(data)
        # Pages materialized before the headlines existed have none: the tables still show.
        context["headlines"] = [
            {
                **h,
                "figure": charts.headline_bars(h),
                "empty": charts.nothing_to_chart(h["rows"]),
                "subset_note": _subset_text(data, h["benchmark"]),
            }
            for h in data.get("headlines", [])
        ]
        context["plotly_bundle"] = bundles.for_page(context)
    return awaiting_uncached(context, render(request, "boxbench/overview.html", context))


def _subset_notes(data: OverviewPage) -> dict[str, str]:
    """{score tree path: "2 of 10 units"} for every benchmark published over a subset of its
    units, and for its section, whose score it feeds: a subset is labelled wherever its score is
    used."""
    notes: dict[str, str] = {}
    for section in data["tree"]["children"]:
        said = []
        for child in section["children"]:
            text = _subset_text(data, child["key"])
            if text:
                notes[f"{section['key']}/{child['key']}"] = text
                said.append(f"{data['benchmarks'][child['key']]['title']}: {text}")
        if said:
            notes[section["key"]] = "; ".join(said)
    return notes


def _subset_text(data: OverviewPage, benchmark: str) -> str:
    found = data["benchmarks"].get(benchmark)
    scope = found["unit_scope"] if found else None
    return scope["text"] if scope and scope["subset"] else ""


HELD_BACK_CELL = "held back"

# The overview's rows that open to show their children.
OPENING = ("section", "benchmark")


def _tree_rows(rows: list[dict], columns: list[str]) -> list[dict]:
    """Every row of the tree, each with one cell per provider column; those below a section
    start folded. Which rows are open lives in the address (`open=`) and only the page's script
    reads it (dashboard.js): were it part of the page, every subset of rows would be a page of
    its own in the cache, millions of them on the full plan."""
    for row in rows:
        by_provider = {p: (score, rank) for p, score, rank in row["ranking"]}
        row["cells"] = [by_provider.get(p) for p in columns]
        row["opens"] = row["level"] in OPENING
        row["folded"] = row["level"] not in ("overall", "section")
    return rows


def _composite_rows(data: OverviewPage) -> list[dict]:
    time, cost = data["composites"].get("time", {}), data["composites"].get("cost", {})
    rows = [
        {
            "provider": data["providers"].get(p, {"provider_name": p}),
            "time": time.get(p),
            "cost": cost.get(p),
        }
        for p in sorted(set(time) | set(cost))
    ]
    rows = [r for r in rows if r["time"] is not None or r["cost"] is not None]
    return sorted(rows, key=lambda r: (r["time"] is None, r["time"] or 0))
