"""The SVG badge per provider and benchmark (/providers/<slug>/<benchmark>.svg): the provider's
value and rank as the benchmark page and the JSON API publish them."""

import xml.etree.ElementTree as ET

import pytest

from boxbench.leaderboard.materialize import materialize
from boxbench.models import Aggregate, Benchmark, Scope

pytestmark = pytest.mark.django_db
SVG = "{http://www.w3.org/2000/svg}"


def texts(response) -> list[str]:
    assert response.status_code == 200
    assert response["Content-Type"] == "image/svg+xml; charset=utf-8"
    root = ET.fromstring(response.content)  # well-formed XML
    return [t.text for t in root.iter(f"{SVG}text")]


def test_a_badge_shows_the_providers_median_and_rank(client, published_run):
    summary = client.get("/api/v1/benchmarks/cpu").json()["page"]
    local = next(r for r in summary["rows"] if r["provider"] == "local")
    label, value = texts(client.get("/providers/local/cpu.svg"))
    assert label == "boxbench CPU"
    ranked = sum(1 for r in summary["rows"] if r["rank"] is not None)
    assert value == f"{local['workload_value']:.1f} ops/s · #{local['rank']} of {ranked}"


def test_an_unranked_provider_shows_its_label(client, published_run):
    # Tiny Cloud was refused (it lacks a capability): its row has a label and no rank.
    summary = Aggregate.objects.page(Scope.BENCHMARK, "cpu")
    tiny = next(r for r in summary["rows"] if r["provider"] == "tiny")
    assert tiny["rank"] is None and tiny["label"]
    assert texts(client.get("/providers/tiny/cpu.svg"))[1] == tiny["label"]


def test_names_are_escaped_in_the_svg(client, published_run):
    Benchmark.objects.filter(slug="cpu").update(title="CPU <b>&</b>")
    materialize()
    label, _ = texts(client.get("/providers/local/cpu.svg"))
    assert label == "boxbench CPU <b>&</b>"


@pytest.mark.parametrize("url", ["/providers/nobody/cpu.svg", "/providers/local/nothing.svg"])
def test_a_badge_of_nothing_published_is_a_404(client, published_run, url):
    assert client.get(url).status_code == 404
