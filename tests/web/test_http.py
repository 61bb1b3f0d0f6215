"""HTTP hygiene (boxbench/middleware.py): methods, control characters, HEAD, page numbers and
the Content-Security-Policy."""

import pytest

from boxbench.middleware import without_body
from tests.web import factory
from tests.web.http_probe import check_methods

pytestmark = pytest.mark.django_db
UNIT = "/benchmarks/create/units/create/"


@pytest.mark.parametrize("method", ["options", "trace", "put", "patch", "delete"])
def test_it_answers_405_to_methods_that_serve_no_page(client, published_run, method):
    response = getattr(client, method)("/")
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD, POST"
    assert b"<html" not in response.content


@pytest.mark.parametrize(
    "query, named",
    [
        ("?page=%00", "'page'"),
        ("?provider=docker%00", "'provider'"),
        ("?p%00ge=1", "'p\\x00ge'"),
        ("?open=a%1bb", "'open'"),
        ("?unit=%7f", "'unit'"),
    ],
)
def test_it_refuses_control_characters_in_query_parameters(client, published_run, query, named):
    response = client.get(UNIT + query)
    assert response.status_code == 400
    assert named in response.content.decode()


def test_it_refuses_a_control_character_in_the_path(client, published_run):
    assert client.get("/providers/local%00/").status_code == 400
    assert client.get("/admin/django_q/success/%00/change/").status_code == 400


def test_it_accepts_unicode_that_is_no_control_character(client, published_run):
    # It reaches the view, which finds no such provider: a 404, not a refused request.
    assert client.get(UNIT + "?provider=d%C3%B6cker").status_code == 404


@pytest.mark.parametrize("page", ["2", "99999999999999999", "10000001", "0", "-1", "1e3", "x"])
def test_it_answers_404_to_a_page_beyond_the_last_or_not_a_page(client, published_run, page):
    assert client.get(f"{UNIT}?page={page}").status_code == 404


def test_it_serves_the_first_page_of_trials(client, published_run):
    assert client.get(UNIT).status_code == 200
    assert client.get(f"{UNIT}?page=1")["Location"] == UNIT  # the page's one address


def test_it_sends_the_content_security_policy_on_every_page(client, published_run):
    for path in ("/", UNIT, f"/runs/{factory.RUN_ID}/", "/admin/login/"):
        policy = client.get(path)["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "object-src 'none'" in policy


def test_it_drops_the_body_of_a_head_answer_and_keeps_its_length():
    from django.http import HttpResponse, StreamingHttpResponse

    page = HttpResponse(b"<html>page</html>")
    without_body(page)
    assert page.content == b"" and page["Content-Length"] == "17"
    started = []

    def export():
        started.append(True)
        yield b"row\n"

    download = StreamingHttpResponse(export())
    without_body(download)
    assert b"".join(download.streaming_content) == b"" and not started


@pytest.mark.django_db(transaction=True)
def test_the_development_server_answers_head_without_a_body(live_server):
    """live_server runs Django's runserver server (django.core.servers.basehttp)."""
    check_methods(int(live_server.url.rsplit(":", 1)[1]))


def test_it_answers_404_to_a_malformed_id_in_the_admins_view_on_site_link(admin_client):
    from django.contrib.contenttypes.models import ContentType

    from boxbench.models import Run

    run_type = ContentType.objects.get_for_model(Run).id
    assert admin_client.get(f"/admin/r/{run_type}/not-a-uuid/").status_code == 404
