"""One Download menu per page: the page's table as CSV, all of the page's data as JSON (the
API's answer, the same materialized rows), and the raw trials of each run behind it. Only
addresses: what they serve is decided by their own views."""

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse

Entry = dict  # {"label": str, "links": [(text, address)]}


def _query(**params: str) -> str:
    kept = {name: value for name, value in params.items() if value}
    return "?" + urlencode(kept) if kept else ""


def raw_entries(sources: list[dict]) -> list[Entry]:
    """The raw trials of each distinct run behind a page (published runs only: a page's sources
    are the runs its published numbers come from)."""
    seen: dict[str, str] = {}
    for source in sources:
        seen.setdefault(source["run"], source["run_name"])
    return [
        {
            "label": f"Raw trials of run {name}",
            "links": [
                ("CSV", reverse("run-raw-csv", args=[run])),
                ("JSON Lines", reverse("run-raw-jsonl", args=[run])),
            ],
        }
        for run, name in seen.items()
    ]


def overview_menu(overview: Mapping[str, Any]) -> list[Entry]:
    sources = [s for b in overview["benchmarks"].values() for s in b["sources"]]
    return [
        {
            "label": "The score tree with each value, unit and interval",
            "links": [("CSV", reverse("overview-csv"))],
        },
        {"label": "All of this page's data", "links": [("JSON", reverse("api-overview"))]},
        *raw_entries(sources),
    ]


def benchmark_menu(summary: Mapping[str, Any], unit: str, view: str) -> list[Entry]:
    slug = summary["benchmark"]
    query = _query(view="cost" if view == "cost" else "")
    entries = [
        {
            "label": "This board" + (" (Cost view)" if view == "cost" else ""),
            "links": [("CSV", reverse("benchmark-csv", args=[slug]) + query)],
        },
    ]
    if unit:
        entries.append(
            {
                "label": "The unit's table",
                "links": [("CSV", reverse("unit-csv", args=[slug, unit]) + query)],
            }
        )
    entries.append(
        {
            "label": "All of this board's data",
            "links": [("JSON", reverse("api-benchmark", args=[slug]) + query)],
        }
    )
    return entries + raw_entries(summary["sources"])


def unit_menu(unit: Mapping[str, Any]) -> list[Entry]:
    slug, unit_slug = unit["benchmark"], unit["unit"]
    return [
        {"label": "This table", "links": [("CSV", reverse("unit-csv", args=[slug, unit_slug]))]},
        {
            "label": "All of this unit's data",
            "links": [("JSON", reverse("api-unit", args=[slug, unit_slug]))],
        },
        *raw_entries(unit["sources"]),
    ]


def provider_menu(page: Mapping[str, Any]) -> list[Entry]:
    sources = [{"run": r["run"], "run_name": r["run_name"]} for r in page["results"]]
    return [
        {
            "label": "All of this provider's results",
            "links": [("JSON", reverse("api-provider", args=[page["provider"]]))],
        },
        *raw_entries(sources),
    ]


def compare_menu(a: str, b: str) -> list[Entry]:
    query = _query(a=a, b=b)
    return [
        {
            "label": "The whole comparison, every benchmark and unit",
            "links": [("CSV", reverse("compare-csv") + query)],
        },
        {"label": "This page's data", "links": [("JSON", reverse("api-compare") + query)]},
    ]
