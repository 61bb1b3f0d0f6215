"""The overview's pictures, a comparison, a history chart and a badge in headless Chromium, at
1280 px and on a phone (400 px): every chart drawn, its numbers those of the JSON API, no label cut
off at the chart's edge (or the badge's) and no two labels on top of each other. Screenshots go to
var/screenshots/."""

import json

import pytest

from boxbench.history_charts import series_name
from boxbench.templatetags.boxbench_format import num
from tests.support.web import SHOTS, visit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Text plotly draws that a reader has to read: axis ticks and titles, legend entries, chart
# titles and status annotations; a bar's own value is checked to stay inside the chart.
LABELS = ".ytick text, .xtick text, .g-xtitle text, .legendtext, .gtitle, .annotation-text"


def boxes(chart, selector: str) -> list[tuple[str, dict]]:
    found = []
    for element in chart.locator(selector).all():
        box = element.bounding_box()
        text = element.text_content() or ""
        if box and box["width"] and text.strip():
            found.append((text, box))
    return found


def overlap(a: dict, b: dict, slack: float = 1.0) -> bool:
    return (
        a["x"] + slack < b["x"] + b["width"]
        and b["x"] + slack < a["x"] + a["width"]
        and a["y"] + slack < b["y"] + b["height"]
        and b["y"] + slack < a["y"] + a["height"]
    )


def assert_readable(tab, path: str, width: int) -> int:
    """Every chart on the page: labels inside the chart and the viewport, none overlapping.
    Returns how many charts were checked."""
    charts = tab.locator("div.chart").all()
    for chart in charts:
        frame = chart.bounding_box()
        assert frame["x"] >= 0 and frame["x"] + frame["width"] <= width + 1, path
        labels = boxes(chart, LABELS)
        assert labels, f"{path}: a chart without labels"
        for text, box in [*labels, *boxes(chart, ".bartext")]:
            assert box["x"] >= frame["x"] - 1, f"{path}: {text!r} is cut on the left"
            assert box["x"] + box["width"] <= frame["x"] + frame["width"] + 1, (
                f"{path}: {text!r} is cut on the right"
            )
        for i, (text, box) in enumerate(labels):
            for other, other_box in labels[i + 1 :]:
                assert not overlap(box, other_box), f"{path}: {text!r} overlaps {other!r}"
    return len(charts)


def new_tab(browser, width: int):
    """A browser context of this width and its tab, which collects the page's script errors."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    tab = context.new_page()
    tab.errors = []
    tab.on("pageerror", lambda e: tab.errors.append(str(e)))
    return context, tab


def embedded(tab, chart_id: str) -> dict:
    return json.loads(tab.locator(f"#{chart_id}-data").text_content())


@pytest.mark.parametrize("width", [1280, 400])
def test_the_overview_pictures_read_well_and_match_the_api(
    live_server, browser, published_run, client, width
):
    context, tab = new_tab(browser, width)
    visit(tab, live_server.url + "/", f"overview-pictures-{width}px")
    assert assert_readable(tab, "/", width) == 4  # the score chart and three headlines
    api = client.get("/api/v1/overview").json()["page"]
    tree = api["tree"]
    names = {p["provider_name"]: slug for slug, p in api["providers"].items()}
    drawn = embedded(tab, "score-chart")["data"]
    assert len(drawn) == len(tree["scores"])
    for trace in drawn:
        slug = names[trace["name"].split(" (")[0]]
        assert trace["x"][0] == tree["scores"][slug]
    # Every ranked provider has a drawn bar in each headline chart, and the chart links to its
    # benchmark's page.
    for headline in api["headlines"]:
        chart = tab.locator(f"#headline-{headline['section']}-chart")
        ranked = [r for r in headline["rows"] if r["ranked"]]
        assert chart.locator(".trace.bars .point").count() == len(ranked)
        values = embedded(tab, f"headline-{headline['section']}-chart")["data"][0]["x"]
        assert values == [r["value"] for r in ranked]
        link = tab.locator(f"#headline-{headline['section']} figcaption a").first
        assert link.get_attribute("href") == f"/benchmarks/{headline['benchmark']}/"
    context.close()


@pytest.mark.parametrize("width", [1280, 400])
def test_a_comparison_reads_well(live_server, browser, published_run, client, width):
    context, tab = new_tab(browser, width)
    visit(tab, live_server.url + "/compare/?a=local&b=docker", f"compare-{width}px")
    api = client.get("/api/v1/compare?a=local&b=docker").json()["page"]
    assert tab.locator("#compare-summary").inner_text() == api["summary"]["text"]
    shown = tab.locator("#compare-rows tbody tr").count()
    assert shown == len(api["rows"])
    assert tab.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    context.close()


@pytest.mark.parametrize("width", [1280, 400])
def test_a_history_chart_and_a_badge_read_well_and_match_the_api(
    live_server, browser, published_run, client, width
):
    context, tab = new_tab(browser, width)
    visit(tab, live_server.url + "/benchmarks/create/", f"history-{width}px")
    assert assert_readable(tab, "/benchmarks/create/", width) >= 1
    history = client.get("/api/v1/benchmarks/create/history").json()["page"]
    expected = {
        series_name(s): [p["median"] for p in s["points"] if p["median"] is not None]
        for s in history["series"]
    }
    drawn = embedded(tab, "history-chart")["data"]
    assert {trace["name"]: trace["y"] for trace in drawn} == {
        name: medians for name, medians in expected.items() if medians
    }
    # The badge says what the benchmark's API answer says, and its text fits inside it.
    rows = client.get("/api/v1/benchmarks/create").json()["page"]["rows"]
    local = next(r for r in rows if r["provider"] == "local")
    ranked = sum(r["rank"] is not None for r in rows)
    # An SVG document: opened and drawn as a README's image would be, then screenshotted alone
    # (a full-page screenshot of a bare SVG document never finishes in Chromium).
    response = tab.goto(live_server.url + "/providers/local/create.svg")
    assert response.status == 200 and response.headers["content-type"].startswith("image/svg")
    tab.locator("svg").screenshot(path=str(SHOTS / f"badge-{width}px.png"))
    texts = tab.locator("text").all_text_contents()
    assert f"{num(local['workload_value'])} ms · #{local['rank']} of {ranked}" in texts
    fits = tab.evaluate(
        """() => { const svg = document.querySelector('svg');
                   const width = svg.width.baseVal.value;
                   return [...svg.querySelectorAll('text')].every(t => {
                       const box = t.getBBox(); return box.x >= 0 && box.x + box.width <= width;
                   }); }"""
    )
    assert fits
    context.close()
