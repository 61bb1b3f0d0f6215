"""The JSON API (/api/v1/, docs/api.md): every answer matches the type its OpenAPI description is
generated from, carries the same rows as the page's CSV, and shows a visitor only what the pages
do (tests/web/test_personas.py runs every persona over its URLs too); its paged answers walked by
their links, and a page number that names nothing refused without a cache entry."""

import csv
import io
import re
from pathlib import Path
from typing import get_type_hints

import pytest
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.urls import get_resolver

from boxbench import api_schema
from boxbench.leaderboard import shapes, slices
from boxbench.leaderboard.materialize import materialize
from boxbench.models import Aggregate, Run, RunStatus, Scope

pytestmark = pytest.mark.django_db

ANSWERS = {get_type_hints(e.answer)["kind"].__args__[0]: e.answer for e in api_schema.ENDPOINTS}


def fetch(client, url: str) -> dict:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    assert response["Content-Type"] == "application/json"
    data = response.json()
    assert data["api_version"] == "1"
    return shapes.check(ANSWERS[data["kind"]], data, url)


def csv_rows(client, url: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(client.get(url).content.decode())))


def api_urls_with_csv() -> list[tuple[str, str]]:
    """(API URL, the CSV download with the same rows) for every published page that has one."""
    pairs = [("/api/v1/overview", "/scores.csv")]
    for scope, key, data in Aggregate.objects.values_list("scope", "key", "data"):
        views = ["", "?view=cost"] if data.get("cost_view") else [""]
        if scope == Scope.BENCHMARK:
            pairs += [(f"/api/v1/benchmarks/{key}{v}", f"/benchmarks/{key}.csv{v}") for v in views]
        elif scope == Scope.UNIT:
            slug, unit = key.split("/")
            pairs += [
                (
                    f"/api/v1/benchmarks/{slug}/units/{unit}{v}",
                    f"/benchmarks/{slug}/units/{unit}.csv{v}",
                )
                for v in views
            ]
        elif scope == Scope.COMPARE:
            a, b = key.split("/")
            pairs.append((f"/api/v1/compare?a={a}&b={b}", f"/compare.csv?a={a}&b={b}"))
        elif scope == Scope.RELIABILITY:
            pairs.append(("/api/v1/reliability", "/reliability.csv"))
    return pairs


def test_every_answer_matches_its_type_and_carries_the_csvs_rows(client, published_run):
    pairs = api_urls_with_csv()
    assert any("compare" in url for url, _ in pairs) and any("view=cost" in u for u, _ in pairs)
    assert ("/api/v1/reliability", "/reliability.csv") in pairs
    for url, download in pairs:
        answer = fetch(client, url)
        assert [answer["table"]["columns"], *answer["table"]["rows"]] == csv_rows(client, download)
        assert answer["publication"] == Aggregate.objects.publication_version()


def test_the_pages_are_the_materialized_ones_without_internal_keys(client, published_run):
    unit = fetch(client, "/api/v1/benchmarks/create/units/create")["page"]
    stored = Aggregate.objects.page(Scope.UNIT, "create", "create")
    assert set(stored) - set(unit) == {"benchmark_id", "unit_id", "cells"}
    assert all(unit[key] == stored[key] for key in unit)
    overview = fetch(client, "/api/v1/overview")["page"]
    assert overview == Aggregate.objects.page(Scope.OVERVIEW)
    provider = fetch(client, "/api/v1/providers/local")["page"]
    assert provider == Aggregate.objects.page(Scope.PROVIDER, "local")


def test_a_runs_manifest_and_audit(client, published_run):
    manifest = fetch(client, f"/api/v1/runs/{published_run.id}/manifest")
    assert manifest["manifest"]["seed"] == 7 and manifest["published"] is True
    audit = fetch(client, f"/api/v1/runs/{published_run.id}/audit")
    assert audit["audit_report"]["pairs"]
    assert (
        audit["resolutions"] == Aggregate.objects.page(Scope.RUN, published_run.id)["resolutions"]
    )


def test_excluded_trials_show_the_start_of_their_id_as_on_the_run_page(client, published_run):
    report = dict(published_run.audit_report)
    trial = "0123456789abcdef-private-rest"
    excluded = [{"trial_id": trial, "value": 1.0, "reason": "r"}]
    report["pairs"] = [{**report["pairs"][0], "excluded_trials": excluded}]
    Run.objects.filter(id=published_run.id).update(audit_report=report)
    body = client.get(f"/api/v1/runs/{published_run.id}/audit").content.decode()
    assert "01234567" in body and trial not in body


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/benchmarks/nothing",
        "/api/v1/benchmarks/create/units/nothing",
        "/api/v1/benchmarks/create?view=cost",  # Create has no Cost view
        "/api/v1/providers/nobody",
        "/api/v1/compare",
        "/api/v1/compare?a=local",
        "/api/v1/compare?a=local&b=nobody",
        "/api/v1/runs/abcdef01-2345-4678-9abc-def012345678/manifest",
    ],
)
def test_what_is_not_published_is_a_404(client, published_run, url):
    assert client.get(url).status_code == 404


def test_an_unpublished_run_is_hidden_from_visitors(client, published_run):
    pending = Run.objects.create(name="pending", status=RunStatus.PLANNED)
    for part in ("manifest", "audit"):
        assert client.get(f"/api/v1/runs/{pending.id}/{part}").status_code == 404


def test_nothing_published_is_a_404_not_an_error(client, db):
    assert client.get("/api/v1/overview").status_code == 404
    assert fetch(client, "/api/v1/")["endpoints"]


def test_a_new_publication_is_served_at_once(client, published_run):
    first = fetch(client, "/api/v1/overview")["publication"]
    assert fetch(client, "/api/v1/overview")["publication"] == first  # from the cache
    materialize()  # what the next publication does: every row replaced
    assert fetch(client, "/api/v1/overview")["publication"] != first


def api_routes() -> list[str]:
    """Every /api/v1/ route of the URLconf as an OpenAPI path template."""
    found = []
    for pattern in get_resolver().url_patterns:
        route = str(pattern.pattern)
        described = route.endswith("openapi.json") or route.endswith("docs/")  # not JSON answers
        if route.startswith("api/v1/") and not described:
            route = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
            found.append("/" + route.replace("{unit_slug}", "{unit}").replace("{run_id}", "{run}"))
    return found


def test_the_openapi_description_and_docs_name_every_route(client, db):
    described = client.get("/api/v1/openapi.json").json()
    assert described["openapi"].startswith("3.1")
    assert sorted(described["paths"]) == sorted(api_routes())
    docs = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    for path in described["paths"]:
        assert f"`{path}" in docs, path
    # Its schemas are the page shapes': a key added to a shape appears in the description.
    row = described["components"]["schemas"]["CompareRow"]
    assert set(row["properties"]) == set(get_type_hints(shapes.CompareRow))


# -- paged answers (docs/api.md, "Pages") ---------------------------------------------------------


def page_cache_entries() -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {settings.CACHE_TABLE}")
        return cursor.fetchone()[0]


def walk(client, url: str) -> list[dict]:
    """Every page of a paged answer, from `url` on by the `next` links."""
    answers = []
    while url:
        answer = fetch(client, url)
        assert answer["pagination"]["page"] == len(answers) + 1
        answers.append(answer)
        url = answer["pagination"]["next"]
    return answers


def test_the_overviews_pages_hold_every_unit_row_of_scores_csv_once(
    client, published_run, monkeypatch
):
    whole = fetch(client, "/api/v1/overview")
    assert whole["pagination"] == {
        "page": 1,
        "pages": 1,
        "per_page": slices.OVERVIEW_UNITS_PER_PAGE,
        "next": None,
        "previous": None,
    }
    monkeypatch.setattr(slices, "OVERVIEW_UNITS_PER_PAGE", 1)
    cache.clear()  # the one-page answer above was kept
    pages = walk(client, "/api/v1/overview")
    header, *rows = csv_rows(client, "/scores.csv")
    units = [row for row in rows if row[0] == "unit"]
    assert len(pages) == len(units_of(whole)) > 1
    paged_units = []
    for answer in pages:
        assert answer["table"]["columns"] == header
        paged_units += [row for row in answer["table"]["rows"] if row[0] == "unit"]
        # The rows above the units (overall, sections, benchmarks) are on every page.
        above = [row for row in answer["table"]["rows"] if row[0] != "unit"]
        assert above == [row for row in rows if row[0] != "unit"]
    assert sorted(paged_units) == sorted(units)
    assert pages[0]["pagination"]["previous"] is None
    assert pages[1]["pagination"]["previous"] == "/api/v1/overview"
    assert pages[-1]["pagination"]["previous"] == f"/api/v1/overview?page={len(pages) - 1}"


def units_of(answer: dict) -> set[tuple[str, str]]:
    return {
        (slug, unit)
        for slug, benchmark in answer["page"]["benchmarks"].items()
        for unit in benchmark["units"]
    }


def test_a_comparisons_pages_are_linked(client, published_run, monkeypatch):
    monkeypatch.setattr(slices, "UNITS_PER_PAGE", 1)
    first = fetch(client, "/api/v1/compare?a=local&b=docker")
    assert (first["pagination"]["pages"], first["pagination"]["next"]) == (1, None)
    benchmark = next(b for b in first["page"]["benchmarks"] if b["units"] > 1)["benchmark"]
    start = f"/api/v1/compare?a=local&b=docker&benchmark={benchmark}"
    pages = walk(client, start)
    assert len(pages) == pages[0]["pagination"]["pages"] > 1
    assert pages[1]["pagination"]["previous"] == start
    units = [row["unit"] for answer in pages for row in answer["page"]["rows"]]
    assert len(set(units)) == len(pages)


JUNK_PAGES = ["page=0", "page=-1", f"page={10**30}", "page=x", "page=01", "page=2", "page=1.0"]


def test_a_page_that_names_nothing_is_a_404_and_adds_no_cache_entry(client, published_run):
    fetch(client, "/api/v1/overview")
    kept = page_cache_entries()
    for query in JUNK_PAGES:
        for url in (f"/api/v1/overview?{query}", f"/api/v1/compare?a=local&b=docker&{query}"):
            response = client.get(url)
            assert response.status_code == 404, url
    assert page_cache_entries() == kept


def test_the_first_page_asked_by_number_is_the_address_without_it(client, published_run):
    response = client.get("/api/v1/overview?page=1")
    assert (response.status_code, response["Location"]) == (302, "/api/v1/overview")
