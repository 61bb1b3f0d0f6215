"""The Reliability view (/reliability/, its CSV and /api/v1/reliability): failure rates per
provider and operation, read from what publication materialized (leaderboard.reliability)."""

from django.shortcuts import render
from django.urls import reverse

from boxbench import permissions
from boxbench.leaderboard.shapes.reliability import FailureRate, ReliabilityPage
from boxbench.models import Aggregate, Scope
from boxbench.views.access import aggregate
from boxbench.views.awaiting import awaiting_runs
from boxbench.views.downloads import csv_response
from boxbench.views.tables import Table

ALL = "all"  # the operation column of a provider's every attempt together
OWNER_COLUMNS = ("provider", "unknown", "benchmark", "environment")
BLANK = {
    "failure rate": "Not Measured: fewer attempts than the floor.",
    "ci_low": "Not Measured: fewer attempts than the floor.",
    "ci_high": "Not Measured: fewer attempts than the floor.",
    "label": "Measured: at least the floor of attempts.",
}


def reliability_table(page: ReliabilityPage | dict) -> Table:
    """One row per provider and operation it attempted, its every attempt first ("all"): the
    page's table and the CSV, cell for cell."""
    classes = page["cause_classes"]
    columns = [
        "provider",
        "operation",
        "attempts",
        "provider failures",
        "failure rate",
        "ci_low",
        "ci_high",
        "label",
        *(f"failed, owner {owner}" for owner in OWNER_COLUMNS),
        *(f"failed, {cls}" for cls in classes),
        "failures on no operation",
    ]
    rows = []
    for provider in page["providers"]:
        operations = {ALL: provider["overall"], **provider["operations"]}
        for operation, figures in operations.items():
            unplaced = str(provider["unplaced"]) if operation == ALL else "0"
            rows.append([provider["provider"], operation, *_figures(figures, classes), unplaced])
    return Table(columns, rows, BLANK)


def _figures(figures: FailureRate, classes: list[str]) -> list[str]:
    return [
        str(figures["attempts"]),
        str(figures["failures"]),
        _share(figures["rate"]),
        _share(figures["ci_low"]),
        _share(figures["ci_high"]),
        figures["label"],
        *(str(figures["by_owner"].get(owner, 0)) for owner in OWNER_COLUMNS),
        *(str(figures["by_class"].get(cls, 0)) for cls in classes),
    ]


def _share(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


def matrix(page: ReliabilityPage | dict) -> list[dict]:
    """Each provider's cells in the page's operation order (None: never attempted)."""
    return [
        {
            "provider": p,
            "overall": p["overall"],
            "cells": [p["operations"].get(op) for op in page["operations"]],
        }
        for p in page["providers"]
    ]


def history(page: ReliabilityPage | dict) -> list[dict]:
    """Each provider's runs, newest first, with a cell per operation of the page."""
    return [
        {
            "provider": p,
            "runs": [
                {**run, "cells": [run["operations"].get(op) for op in page["operations"]]}
                for run in p["history"]
            ],
        }
        for p in page["providers"]
    ]


def menu() -> list[dict]:
    return [
        {
            "label": "Failure rates by provider and operation",
            "links": [("CSV", reverse("reliability-csv"))],
        },
        {"label": "All of this page's data", "links": [("JSON", reverse("api-reliability"))]},
    ]


def reliability(request):
    data = Aggregate.objects.page(Scope.RELIABILITY)  # a ReliabilityPage
    context: dict = {"page": data}
    if data is None:
        if permissions.may(request, permissions.VIEW_UNPUBLISHED):
            context["awaiting"] = awaiting_runs()
        return render(request, "boxbench/reliability.html", context)
    context.update(
        table=reliability_table(data),
        matrix=matrix(data),
        history=history(data),
        downloads=menu(),
    )
    return render(request, "boxbench/reliability.html", context)


def reliability_csv(request):
    return csv_response(reliability_table(aggregate(Scope.RELIABILITY)), "reliability.csv")
