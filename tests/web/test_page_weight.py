"""Light on the wire: each chart page loads the smallest plotly.js bundle that draws its charts,
and static files go out under hashed names, compressed, cached for good."""

import gzip
import importlib.util
import json
import re
from pathlib import Path

import brotli
import pytest
from django.conf import settings

from boxbench import bundles

pytestmark = pytest.mark.django_db  # the web tests' page cache is a database table

STATIC_LINK = re.compile(r'(?:src|href)="(/static/[^"]+)"')
FIGURE = re.compile(r'<script id="[\w-]+-chart-data" type="application/json">(.*?)</script>', re.S)
YEAR = 365 * 24 * 3600
# What plotly's Python package ships, the bundle every chart page used to load.
FULL_BUNDLE = (
    Path(importlib.util.find_spec("plotly").submodule_search_locations[0])
    / "package_data"
    / "plotly.min.js"
)


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_the_smallest_bundle_is_chosen_for_the_trace_types_drawn():
    bars = {"data": [{"type": "bar"}, {"y": [1]}], "layout": {}}  # no type: a scatter
    boxes = {"data": [{"type": "box"}], "layout": {}}
    assert bundles.smallest([bars, None]) == "vendor/plotly-basic.min.js"
    assert bundles.smallest([bars, boxes]) == "vendor/plotly-cartesian.min.js"
    with pytest.raises(ValueError, match="sunburst"):
        bundles.smallest([{"data": [{"type": "sunburst"}], "layout": {}}])
    for path, _ in bundles.BUNDLES:
        assert (Path(settings.BASE_DIR) / "static" / path).is_file()


@pytest.mark.parametrize(
    "path, bundle",
    [
        ("/", "basic"),
        ("/benchmarks/create/", "basic"),
        ("/benchmarks/deepswe/?view=cost", "basic"),
        ("/benchmarks/create/units/create/", "cartesian"),
    ],
)
def test_a_chart_page_loads_the_smallest_bundle_drawing_its_charts(
    client, published_run, path, bundle
):
    page = client.get(path).content.decode()
    scripts = re.findall(r'<script src="/static/vendor/plotly-(\w+)\.min\.[0-9a-f]{12}\.js"', page)
    assert scripts == [bundle]
    drawn = bundles.trace_types(json.loads(data) for data in FIGURE.findall(page))
    assert drawn, path
    assert drawn <= dict(bundles.BUNDLES)[f"vendor/plotly-{bundle}.min.js"]


def test_static_files_go_out_compressed_under_hashed_names_cached_for_good(client, published_run):
    links = STATIC_LINK.findall(client.get("/").content.decode())
    assert len(links) == 3  # the stylesheet, plotly.js and the dashboard's script
    sources = Path(settings.BASE_DIR) / "static"
    for link in links:
        source = sources / re.sub(r"\.[0-9a-f]{12}(\.\w+)$", r"\1", link.removeprefix("/static/"))
        for encoding, decompress in (("br", brotli.decompress), ("gzip", gzip.decompress)):
            response = client.get(link, headers={"accept-encoding": encoding})
            assert response.status_code == 200, link
            assert response.headers["content-encoding"] == encoding, link
            assert decompress(body(response)) == source.read_bytes(), link
            cache = response.headers["cache-control"]
            assert "immutable" in cache and int(re.search(r"max-age=(\d+)", cache)[1]) >= YEAR
        plain = client.get(link)
        assert "content-encoding" not in plain.headers and body(plain) == source.read_bytes()


def test_the_overview_weighs_a_tenth_of_what_the_full_plotly_bundle_did(client, published_run):
    """Bytes a browser with a cold cache fetches for the overview: the page and every static file
    it links, compressed as Chromium asks for them (bench/bench_weight.py prints the figures)."""
    page = client.get("/")
    total = len(page.content)
    for link in STATIC_LINK.findall(page.content.decode()):
        total += len(body(client.get(link, headers={"accept-encoding": "gzip, deflate, br"})))
    assert total < FULL_BUNDLE.stat().st_size / 10
