"""Every materialized page has a declared shape (boxbench/leaderboard/shapes/): the materializer
is checked against it at publication, and every page type renders from materialized data with
no variable its template names missing, so a renamed key fails here, not on a page."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache
from django.urls import reverse

from boxbench import publishing
from boxbench.leaderboard import boards, shapes
from boxbench.leaderboard.materialize import SHAPES
from boxbench.models import Aggregate, Provider, Scope
from tests.support.web import explain_failures
from tests.web.personas import login

pytestmark = pytest.mark.django_db

# Django writes this in place of a template variable it cannot resolve (and names it), where it
# would otherwise write nothing and leave a blank cell.
MISSING = "@@missing %s@@"


@pytest.fixture
def strict_templates(settings):
    engine = settings.TEMPLATES[0]
    settings.TEMPLATES = [
        {**engine, "OPTIONS": {**engine["OPTIONS"], "string_if_invalid": MISSING}}
    ]
    cache.clear()  # a page rendered before this test's publication is not this page


def page_urls() -> list[str]:
    """One address per materialized page, and each benchmark's Cost view where it has one."""
    urls = [reverse("overview")]
    for row in Aggregate.objects.order_by("scope", "key"):
        parts = row.key.split("/")
        if row.scope == Scope.BENCHMARK:
            urls.append(reverse("benchmark", args=parts))
            if row.data["cost_view"]:
                urls.append(reverse("benchmark", args=parts) + "?view=cost")
            for unit in row.data["units"][1:]:  # the first is the page's default unit
                urls.append(reverse("benchmark", args=parts) + f"?unit={unit['slug']}")
        elif row.scope == Scope.UNIT:
            urls.append(reverse("unit", args=parts))
        elif row.scope == Scope.PROVIDER:
            urls.append(reverse("provider", args=parts))
        elif row.scope == Scope.RUN:
            urls.append(reverse("run", args=parts))
        elif row.scope == Scope.COMPARE:
            urls.append(reverse("compare") + f"?a={parts[0]}&b={parts[1]}")
    return urls


def test_every_scope_has_a_declared_shape():
    assert set(SHAPES) == set(Scope)


@pytest.mark.parametrize("persona", ["anonymous", "superuser"])
def test_every_page_type_renders_from_materialized_data_with_nothing_missing(
    client, published_run, strict_templates, persona
):
    login(client, persona)
    urls = page_urls()
    stored = set(Aggregate.objects.values_list("scope", flat=True))
    assert stored == set(Scope)  # the fixture run has a page of every scope
    assert any("view=cost" in url for url in urls) and any("?unit=" in url for url in urls)
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        page = response.content.decode()
        assert "@@missing" not in page, (url, page[page.index("@@missing") :][:200])


def test_the_strict_rendering_names_a_key_the_stored_page_lacks(
    client, published_run, strict_templates
):
    row = Aggregate.objects.get(scope=Scope.UNIT, key="create/create")
    del row.data["benchmark_title"]  # as if the materializer had renamed it
    Aggregate.objects.filter(id=row.id).update(data=row.data)
    page = client.get(reverse("unit", args=["create", "create"])).content.decode()
    assert "@@missing unit.benchmark_title@@" in page


def test_a_renamed_key_stops_the_publication_and_keeps_the_pages_as_they_were(
    imported_run, monkeypatch
):
    explain_failures(imported_run)
    provider_info = boards.provider_info

    def renamed(provider, *args, **kwargs):
        info = dict(provider_info(provider, *args, **kwargs))
        info["provider_title"] = info.pop("provider_name")
        return info

    monkeypatch.setattr(boards, "provider_info", renamed)
    with pytest.raises(shapes.ShapeError, match="provider_name"):
        publishing.publish(imported_run)
    assert not Aggregate.objects.exists()


def test_a_page_is_stored_unchanged_once_it_matches_its_shape():
    scope = {"units": 2, "of": 10, "subset": True, "text": "2 of 10 units"}
    assert shapes.check(shapes.UnitScope, scope, "a page") is scope


@pytest.mark.parametrize(
    "data, message",
    [
        (
            {"units": 2, "of": 10, "subset": True},
            "a page does not match UnitScope: Object missing required field `text`",
        ),
        (
            {"units": "2", "of": 10, "subset": True, "text": ""},
            "Expected `int`, got `str` - at `$.units`",
        ),
        (
            {"units": 2, "of": 10, "subset": True, "text": "", "share": 0.2},
            "a page has keys UnitScope does not declare: $.share",
        ),
    ],
)
def test_a_page_with_a_missing_mistyped_or_undeclared_key_is_refused_by_name(data, message):
    with pytest.raises(shapes.ShapeError) as refused:
        shapes.check(shapes.UnitScope, data, "a page")
    assert message in str(refused.value)


def test_an_undeclared_key_deep_in_a_page_is_named_by_its_path():
    overview = {
        "tree": {
            "key": "overall",
            "level": "overall",
            "label": "",
            "scores": {},
            "ranks": {},
            "children": [
                {
                    "key": "s",
                    "level": "section",
                    "label": "",
                    "scores": {},
                    "ranks": {},
                    "children": [],
                    "weight": 1,
                }
            ],
        },
        "providers": {},
        "benchmarks": {},
        "composites": {},
        "headlines": [],
        "job_host_series": None,
        "not_combined": [],
    }
    with pytest.raises(shapes.ShapeError, match=r"\$\.tree\.children\[0\]\.weight"):
        shapes.check(shapes.OverviewPage, overview, "the overview")


def test_a_provider_added_since_the_last_publication_renders_its_declared_page(
    client, published_run, strict_templates
):
    # Declared in the code (a row of the database alone gets no page: test_unpublished_catalog.py).
    Provider.objects.create(slug="modal", name="Modal", adapter="modal", region="us-east")
    response = client.get(reverse("provider", args=["modal"]))
    page = response.content.decode()
    assert "Modal" in page and "@@missing" not in page
    shapes.check(shapes.ProviderPage, response.context["p"], "the newcomer's page")


def test_the_views_read_the_shapes_without_loading_pandas_or_scipy():
    """The shapes sit in the leaderboard package, whose own module stays light: the web process
    reads them, and the statistics load only when a run is published."""
    code = (
        "import sys, django; django.setup(); import boxbench.urls; "
        "import boxbench.leaderboard.shapes; "
        "print(sorted(m for m in ('pandas', 'scipy') if m in sys.modules))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "boxbench.settings"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.stdout.strip() == "[]"
