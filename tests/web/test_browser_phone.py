"""Every reader page on a phone (400 px) and on a desktop (1280 px), in headless Chromium: nothing
scrolls sideways, the score table shows every provider's column, no mode bar sits over a chart
title, and a reader whose system is dark gets a dark page with charts drawn for it. Screenshots
go to var/screenshots/."""

import pytest

from tests.support.web import visit
from tests.web import factory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

READER_PAGES = {
    "overview": "/?open=workload_time,workload_time/deepswe",
    "benchmark-deepswe": "/benchmarks/deepswe/",
    "benchmark-deepswe-cost": "/benchmarks/deepswe/?view=cost",
    "benchmark-create": "/benchmarks/create/",
    "benchmark-cpu": "/benchmarks/cpu/",
    "unit-trace-a": "/benchmarks/deepswe/units/trace-a/",
    "compare": "/compare/?a=local&b=docker",
    "provider-boat": "/providers/boat/",
    "run": f"/runs/{factory.RUN_ID}/",
    "methodology": "/methodology/",
}


def tab_of(browser, width: int, scheme: str = "light"):
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    tab = context.new_page()
    tab.errors = []
    tab.on("pageerror", lambda e: tab.errors.append(str(e)))
    return context, tab


def overlaps(a: dict, b: dict) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


@pytest.mark.parametrize("width", [1280, 400])
def test_no_reader_page_scrolls_sideways_and_no_mode_bar_covers_a_title(
    live_server, browser, published_run, width
):
    context, tab = tab_of(browser, width)
    for shot, path in READER_PAGES.items():
        visit(tab, live_server.url + path, f"phone-{shot}-{width}px")
        wide = tab.evaluate("document.documentElement.scrollWidth")
        assert wide <= width, f"{path} is {wide} px wide at {width} px"
        for chart in tab.locator("div.chart").all():
            frame = chart.bounding_box()
            assert frame["x"] >= 0 and frame["x"] + frame["width"] <= width, path
            # Plotly shows its mode bar while the pointer is over a chart.
            chart.hover()
            titles = [t.bounding_box() for t in chart.locator(".gtitle").all()]
            for title in titles:  # plotly cuts a title that is wider than its chart
                assert frame["x"] <= title["x"], f"{path}: a chart title starts off its chart"
                assert title["x"] + title["width"] <= frame["x"] + frame["width"], path
            bars = [b.bounding_box() for b in chart.locator(".modebar").all() if b.is_visible()]
            assert not [1 for t in titles for b in bars if overlaps(t, b)], (
                f"{path}: a title is covered"
            )
    context.close()


def test_the_score_table_shows_every_providers_column_on_a_phone(
    live_server, browser, published_run
):
    context, tab = tab_of(browser, 400)
    visit(tab, live_server.url + "/", "phone-score-table-400px")
    headers = tab.locator("#score-tree thead th a").all()
    assert len(headers) == 3  # Local sandbox, Boat, Docker (Tiny Cloud has no score)
    for header in headers:
        box = header.bounding_box()
        assert box["x"] + box["width"] <= 400, f"{header.inner_text()} is off the screen"
    for cell in tab.locator("#score-tree tr.level-overall td").all()[:4]:
        box = cell.bounding_box()
        assert box["x"] + box["width"] <= 400
    context.close()


def luminance(css_colour: str) -> float:
    """0 for black, 1 for white, from getComputedStyle's rgb()/rgba()."""
    red, green, blue = (int(v) for v in css_colour.split("(")[1].split(")")[0].split(",")[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_the_page_and_its_charts_follow_the_readers_colour_scheme(
    live_server, browser, published_run, scheme
):
    context, tab = tab_of(browser, 1280, scheme)
    visit(tab, live_server.url + "/benchmarks/create/", f"scheme-{scheme}-benchmark-create")
    background = luminance(tab.evaluate("getComputedStyle(document.body).backgroundColor"))
    ink = luminance(tab.evaluate("getComputedStyle(document.body).color"))
    tick = tab.locator("#history-chart .xtick text").first
    tick_ink = luminance(tick.evaluate("e => getComputedStyle(e).fill"))
    if scheme == "dark":
        assert background < 0.2 and ink > 0.8 and tick_ink > 0.6
    else:
        assert background > 0.9 and ink < 0.2 and tick_ink < 0.5
    context.close()
