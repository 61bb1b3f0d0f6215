"""One Download menu per page, and every link in it serves what it names: the page's table as
CSV, all of the page's data as JSON, the raw trials of the runs behind it."""

import re

import pytest

from boxbench import publishing
from tests.support.web import rerun_of_docker_create
from tests.web import factory

pytestmark = pytest.mark.django_db

PAGES = [
    "/",
    "/benchmarks/deepswe/",
    "/benchmarks/deepswe/?view=cost",
    "/benchmarks/create/",
    "/benchmarks/deepswe/units/trace-a/",
    "/providers/local/",
    "/compare/?a=local&b=docker",
    f"/runs/{factory.RUN_ID}/",
]
KINDS = {
    "CSV": "text/csv",
    "JSON": "application/json",
    "JSON Lines": "application/x-ndjson",
}


def menu_links(page: str) -> list[tuple[str, str]]:
    """(text, address) of each link in the page's one Download menu."""
    assert page.count('id="downloads"') == 1
    assert 'class="download"' not in page  # no second, older download line
    menu = page[page.index('id="downloads"') :]
    menu = menu[: menu.index("</details>")]
    return [
        (text, href.replace("&amp;", "&"))
        for href, text in re.findall(r'<a href="([^"]+)">([^<]+)</a>', menu)
    ]


@pytest.mark.parametrize("url", PAGES)
def test_every_page_has_one_menu_whose_links_serve_what_they_name(client, published_run, url):
    links = menu_links(client.get(url).content.decode())
    assert {"CSV", "JSON"} & {text for text, _ in links}
    for text, href in links:
        response = client.get(href)
        assert response.status_code == 200, (url, href)
        kind = KINDS.get(text)
        if kind:
            assert response["Content-Type"].startswith(kind), (url, text, href)


def test_the_benchmark_menu_offers_this_board_the_unit_and_the_json_of_the_chosen_view(
    client, published_run
):
    links = dict(
        (href, text)
        for text, href in menu_links(
            client.get("/benchmarks/deepswe/?unit=trace-b&view=cost").content.decode()
        )
    )
    assert "/benchmarks/deepswe.csv?view=cost" in links
    assert "/benchmarks/deepswe/units/trace-b.csv?view=cost" in links
    assert "/api/v1/benchmarks/deepswe?view=cost" in links
    assert f"/runs/{factory.RUN_ID}/raw.csv" in links


def test_the_raw_links_name_each_run_behind_the_page(client, published_run):
    rerun = rerun_of_docker_create("docker-create-rerun", 5)
    publishing.publish(rerun)
    hrefs = {href for _, href in menu_links(client.get("/benchmarks/create/").content.decode())}
    for run in (factory.RUN_ID, str(rerun.id)):
        assert {f"/runs/{run}/raw.csv", f"/runs/{run}/raw.jsonl"} <= hrefs
    overview = {href for _, href in menu_links(client.get("/").content.decode())}
    assert f"/runs/{rerun.id}/raw.csv" in overview


def test_the_run_pages_menu_holds_its_raw_data_manifest_and_audit(client, published_run):
    hrefs = {
        href for _, href in menu_links(client.get(f"/runs/{factory.RUN_ID}/").content.decode())
    }
    assert {
        f"/runs/{factory.RUN_ID}/raw.csv",
        f"/runs/{factory.RUN_ID}/raw.jsonl",
        f"/api/v1/runs/{factory.RUN_ID}/manifest",
        f"/api/v1/runs/{factory.RUN_ID}/audit",
    } <= hrefs
