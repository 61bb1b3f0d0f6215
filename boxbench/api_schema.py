"""The JSON API's answers as types, and its OpenAPI description generated from them.

Every answer is an envelope around one materialized page, declared by the page's own TypedDict
(boxbench.leaderboard.shapes), with the rows of the page's CSV download where it has one. The
OpenAPI document is generated from these types (msgspec's JSON Schema), so the description
cannot drift from what the views serve; the tests check every answer against its type. Pure:
no Django.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypedDict

import msgspec

from boxbench.leaderboard.shapes import (
    BenchmarkPage,
    CompareSlice,
    HeldBackPair,
    HistorySlice,
    OverviewPage,
    ProviderPage,
    PublicUnitPage,
    Resolution,
)
from boxbench.leaderboard.shapes.reliability import ReliabilityPage
from boxbench.leaderboard.slices import OVERVIEW_UNITS_PER_PAGE
from runner.manifest import Manifest

API_VERSION = "1"
PREFIX = "/api/v1/"
OPENAPI_PATH = PREFIX + "openapi.json"
DOCS_PATH = PREFIX + "docs/"


class Table(TypedDict):
    """The rows of the page's CSV download, cell for cell (text, as the CSV writes them)."""

    columns: list[str]
    rows: list[list[str]]


class Pagination(TypedDict):
    """Where a paged answer stands: its links are absolute paths, written as the cache keeps
    them (page 1 without ?page=), and null where there is no such page."""

    page: int
    pages: int
    per_page: int  # units per page (OVERVIEW_UNITS_PER_PAGE, or a comparison's UNITS_PER_PAGE)
    next: str | None
    previous: str | None


class Answer(TypedDict):
    api_version: str  # API_VERSION: a change that breaks a reader gets a new /api/vN/
    publication: int  # the publication the answer comes from (changes with each one)


class IndexAnswer(Answer):
    kind: Literal["index"]
    endpoints: dict[str, str]  # path template: what it answers
    openapi: str  # this API's OpenAPI description (OPENAPI_PATH)
    docs: str  # the same description as a page for people (DOCS_PATH)


class OverviewAnswer(Answer):
    kind: Literal["overview"]
    pagination: Pagination
    page: OverviewPage
    table: Table


class BenchmarkAnswer(Answer):
    kind: Literal["benchmark"]
    view: Literal["time", "cost"]
    page: BenchmarkPage
    table: Table


class UnitAnswer(Answer):
    kind: Literal["unit"]
    view: Literal["time", "cost"]
    page: PublicUnitPage
    table: Table


class HistoryAnswer(Answer):
    kind: Literal["history"]
    page: HistorySlice


class ProviderAnswer(Answer):
    kind: Literal["provider"]
    page: ProviderPage


class ReliabilityAnswer(Answer):
    kind: Literal["reliability"]
    page: ReliabilityPage
    table: Table


class CompareAnswer(Answer):
    kind: Literal["compare"]
    pagination: Pagination
    page: CompareSlice
    table: Table


class ManifestAnswer(Answer):
    kind: Literal["manifest"]
    run: str
    published: bool
    manifest: Manifest


class AuditAnswer(Answer):
    kind: Literal["audit"]
    run: str
    published: bool
    audit_report: dict[str, Any] | None  # stats.audit's report; docs/methodology.md lays it out
    resolutions: list[Resolution]
    held_back: list[HeldBackPair]


@dataclass(frozen=True)
class Endpoint:
    path: str  # OpenAPI path template, under PREFIX
    answer: type
    summary: str
    parameters: tuple[tuple[str, str, bool], ...] = ()  # (name, in, required)


ENDPOINTS = (
    Endpoint("", IndexAnswer, "The endpoints of this version."),
    Endpoint(
        "overview",
        OverviewAnswer,
        "The score tree, composites and the run behind each benchmark, with the units of "
        f"?page=N ({OVERVIEW_UNITS_PER_PAGE} per page, in the tree's order; everything above the "
        "units on every page); the table is scores.csv's rows for what the page holds.",
        (("page", "query", False),),
    ),
    Endpoint(
        "benchmarks/{slug}",
        BenchmarkAnswer,
        "A benchmark's All view (?view=time, the default, or cost); the table is its CSV.",
        (("slug", "path", True), ("view", "query", False)),
    ),
    Endpoint(
        "benchmarks/{slug}/units/{unit}",
        UnitAnswer,
        "One unit of a benchmark (?view=time or cost); the table is its CSV.",
        (("slug", "path", True), ("unit", "path", True), ("view", "query", False)),
    ),
    Endpoint(
        "benchmarks/{slug}/history",
        HistoryAnswer,
        "A benchmark's results series on one unit (?unit=, by default the first of `units`): "
        "every published run's median, and the changes between each series' two newest runs.",
        (("slug", "path", True), ("unit", "query", False)),
    ),
    Endpoint(
        "providers/{slug}",
        ProviderAnswer,
        "A provider's scores and results.",
        (("slug", "path", True),),
    ),
    Endpoint(
        "reliability",
        ReliabilityAnswer,
        "Failure rates per provider and operation over every attempt of the published runs: "
        "the provider's failures with a 95 % Wilson interval (Not Measured below `floor` "
        "attempts), failures by owner and cause class, and each run's rates; the table is "
        "/reliability.csv.",
    ),
    Endpoint(
        "compare",
        CompareAnswer,
        "Two providers side by side: every benchmark's verdict counts, and the rows of each one's "
        "first units, or with ?benchmark= all of that benchmark's units, ?page=N at a time; the "
        "table holds the rows answered, /compare.csv every row.",
        (
            ("a", "query", True),
            ("b", "query", True),
            ("benchmark", "query", False),
            ("page", "query", False),
        ),
    ),
    Endpoint("runs/{run}/manifest", ManifestAnswer, "A run's manifest.", (("run", "path", True),)),
    Endpoint(
        "runs/{run}/audit",
        AuditAnswer,
        "A run's audit report, its resolutions and the pairs held back.",
        (("run", "path", True),),
    ),
)


def index_endpoints() -> dict[str, str]:
    return {
        **{PREFIX + e.path: e.summary for e in ENDPOINTS},
        OPENAPI_PATH: "This API's OpenAPI 3.1 description, generated from the answers' types.",
        DOCS_PATH: "The same description as a page to read (HTML).",
    }


def _schema(parameter: str) -> dict:
    # Written as the links write it: 1 (the default, left out of the address) to 999999999.
    if parameter == "page":
        return {"type": "integer", "minimum": 1, "maximum": 999_999_999}
    return {"type": "string"}


def openapi() -> dict:
    """The OpenAPI 3.1 description of every endpoint, its schemas generated from the types."""
    (schemas, components) = msgspec.json.schema_components(
        [e.answer for e in ENDPOINTS], ref_template="#/components/schemas/{name}"
    )
    paths = {}
    for endpoint, schema in zip(ENDPOINTS, schemas, strict=True):
        parameters = [
            {"name": name, "in": where, "required": required, "schema": _schema(name)}
            for name, where, required in endpoint.parameters
        ]
        paths[PREFIX + endpoint.path] = {
            "get": {
                "summary": endpoint.summary,
                "parameters": parameters,
                "responses": {
                    "200": {
                        "description": "OK",
                        "content": {"application/json": {"schema": schema}},
                    },
                    "404": {
                        "description": "Nothing published (or visible to you) there, or a "
                        "page past the last."
                    },
                },
            }
        }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "boxbench",
            "version": API_VERSION,
            "description": "The published leaderboard as JSON: every table of the public "
            "pages, read from what each publication materialized. A page nothing is published "
            "for is a 404, as on the dashboard.",
        },
        "paths": paths,
        "components": {"schemas": components},
    }
