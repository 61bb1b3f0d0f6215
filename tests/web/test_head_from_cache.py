"""HEAD is answered from the page cache like GET: a flood of HEAD requests renders each page at
most once per publication, as GET does (boxbench/views/cache.py)."""

import pytest

from tests.web import factory

pytestmark = pytest.mark.django_db
PAGES = [
    "/",
    "/benchmarks/deepswe/",
    "/benchmarks/create/units/create/",
    f"/runs/{factory.RUN_ID}/",
]


@pytest.mark.parametrize("path", PAGES)
def test_a_head_request_for_a_cached_page_sends_no_query(client, published_run, page_queries, path):
    assert client.get(path).status_code == 200  # renders and stores the page
    with page_queries() as queries:
        response = client.head(path)
    assert response.status_code == 200
    assert queries == []


def test_a_head_request_stores_the_page_that_a_get_then_reads(client, published_run, page_queries):
    first = client.head("/benchmarks/deepswe/")
    assert first.status_code == 200 and first.content == b""
    with page_queries() as queries:
        response = client.get("/benchmarks/deepswe/")
        again = client.head("/benchmarks/deepswe/")
    assert queries == []
    assert response.status_code == 200 and b"</html>" in response.content
    assert again.status_code == 200 and again.content == b""
    assert again["Content-Type"] == response["Content-Type"]


def test_repeated_head_requests_render_the_page_once(client, published_run, page_queries):
    client.head("/")
    with page_queries() as queries:
        for _ in range(20):
            assert client.head("/").status_code == 200
    assert queries == []
