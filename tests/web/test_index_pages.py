"""The pages the breadcrumbs name (/runs/, /providers/, /benchmarks/) list what is published, and
a missing page is a 404 in the site's frame with a way back."""

import re

import pytest
from django.urls import path

from boxbench import publishing
from boxbench import urls as site_urls
from boxbench.models import Run
from boxbench.views import indexes
from tests.support.web import html_table, rerun_of_docker_create
from tests.web import factory

pytestmark = pytest.mark.django_db


def table_text(response, table_id) -> list[list[str]]:
    """A table's rows as the reader reads them: each cell's text, tags and line breaks gone."""
    return [
        [" ".join(re.sub(r"<[^>]+>", "", cell).split()) for cell in row]
        for row in html_table(response, table_id)
    ]


def test_the_runs_index_lists_published_runs_newest_first(client, published_run):
    rerun = rerun_of_docker_create("docker-create-rerun", 5)
    publishing.publish(rerun)
    rows = table_text(client.get("/runs/"), "runs")
    assert [r[0] for r in rows[1:]] == ["docker-create-rerun", "dashboard-fixture"]
    fixture = rows[2]
    assert fixture[2] == "281" and fixture[4] == "boat, docker, local" and fixture[5] == "3"
    assert rows[1][2:6] == ["20", "20", "docker", "1"]


def test_an_unpublished_run_never_appears_in_the_runs_index(staff_client, imported_run):
    rerun_of_docker_create("never-published", 5)
    page = staff_client.get("/runs/").content.decode()
    assert "No run has been published yet" in page
    assert "never-published" not in page and "dashboard-fixture" not in page


def test_the_runs_index_pages_through_older_runs(client, published_run, monkeypatch):
    monkeypatch.setattr(indexes, "RUNS_PER_PAGE", 1)
    publishing.publish(rerun_of_docker_create("docker-create-rerun", 5))
    first = client.get("/runs/").content.decode()
    assert "docker-create-rerun" in first and "Page 1 of 2" in first
    assert 'href="?page=2" rel="next">older runs' in first
    second = client.get("/runs/?page=2").content.decode()
    assert "dashboard-fixture" in second and "docker-create-rerun" not in second
    assert client.get("/runs/?page=3").status_code == 404
    assert client.get("/runs/?page=x").status_code == 404
    assert client.get("/runs/?page=1")["Location"] == "/runs/"


def test_the_providers_index_ranks_by_overall_score_and_shows_a_badge(client, published_run):
    rows = table_text(client.get("/providers/"), "providers")
    assert [r[0] for r in rows[1:4]] == ["Local sandbox", "Boat (EU)", "Docker"]
    assert [r[2] for r in rows[1:4]] == ["#1", "#2", "#3"] and rows[1][3] == "published"
    tiny = next(r for r in rows if r[0] == "Tiny Cloud")
    assert tiny[1:] == ["", "", "none published yet"]
    page = client.get("/providers/").content.decode()
    badge = page[page.index('id="badge-example"') :]
    src = badge[badge.index('src="') + 5 :].split('"')[0]
    assert client.get(src)["Content-Type"].startswith("image/svg+xml")


def test_the_benchmarks_index_lists_every_published_board_by_section(client, published_run):
    page = client.get("/benchmarks/").content.decode()
    assert page.index("<h2>Workload</h2>") < page.index("<h2>Sandbox Operations</h2>")
    assert page.index("<h2>Sandbox Operations</h2>") < page.index("<h2>Machine Performance</h2>")
    for slug in ("deepswe", "create", "cpu"):
        assert f'href="/benchmarks/{slug}/"' in page
    assert "all 3 units" in page


def test_the_index_pages_say_when_nothing_is_published(client, db):
    assert "No run has been published yet" in client.get("/runs/").content.decode()
    assert "Nothing has been published yet" in client.get("/benchmarks/").content.decode()
    assert client.get("/providers/").status_code == 200


def test_every_page_links_the_indexes_the_api_and_the_badges(client, published_run):
    for url in ("/", "/benchmarks/create/", f"/runs/{factory.RUN_ID}/", "/providers/local/"):
        footer = client.get(url).content.decode().split('id="site-index"')[1]
        for target in ("/runs/", "/benchmarks/", "/providers/", "/providers/#badges", "/api/v1/"):
            assert f'href="{target}"' in footer, (url, target)


def test_breadcrumbs_link_the_index_pages(client, published_run):
    assert '› <a href="/runs/">runs</a>' in client.get(f"/runs/{factory.RUN_ID}/").content.decode()
    assert (
        '› <a href="/providers/">providers</a>' in client.get("/providers/local/").content.decode()
    )
    assert '<a href="/benchmarks/">Sandbox Operations</a>' in (
        client.get("/benchmarks/create/").content.decode()
    )


def test_a_missing_page_is_a_404_in_the_sites_frame_saying_why(client, published_run):
    response = client.get("/benchmarks/no-such-thing/")
    assert response.status_code == 404
    page = response.content.decode()
    assert 'class="brand"' in page and 'href="/runs/"' in page
    assert "no benchmark &#x27;no-such-thing&#x27;" in page
    unknown = client.get("/nowhere/<script>")
    assert unknown.status_code == 404
    text = unknown.content.decode()
    assert "<script>" not in text and "Resolver404" not in text and "tried" not in text


def test_an_unpublished_runs_404_does_not_say_it_exists(client, imported_run):
    page = client.get(f"/runs/{imported_run.id}/").content.decode()
    assert "no such run" in page and imported_run.name not in page
    assert Run.objects.filter(id=imported_run.id, published=False).exists()


def broken(request):
    raise RuntimeError("a bug")


urlpatterns = [path("broken/", broken), *site_urls.urlpatterns]


def test_a_server_error_is_a_500_in_the_sites_frame(client, settings, db):
    settings.ROOT_URLCONF = __name__
    client.raise_request_exception = False
    response = client.get("/broken/")
    assert response.status_code == 500
    page = response.content.decode()
    assert "Something went wrong on our side" in page and 'class="brand"' in page
    assert "a bug" not in page
