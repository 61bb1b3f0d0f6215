"""The shared reader of provider answers (runner/providers/answers.py, http.send): every hostile
answer is a named provider failure, and a body is never read past its cap."""

import gzip
import itertools

import httpx
import msgspec
import pytest

from runner.providers.answers import AnswerLimits, Capped, Listing, Reader
from runner.providers.base import ProviderError
from runner.providers.fakes.server import FakeHTTPServer, Response
from runner.providers.http import make_client, send

READER = Reader("acme", "create", secrets=("sekrit-key-123",))


class Created(msgspec.Struct):
    id: str
    state: str = ""


def test_a_typed_answer_names_the_missing_key():
    with pytest.raises(ProviderError, match=r"acme create: .*missing required field `id`") as e:
        READER.json(b'{"state": "up"}', Created)
    assert e.value.code == "bad_answer" and e.value.operation == "create"


def test_a_typed_answer_names_a_key_of_the_wrong_type():
    with pytest.raises(ProviderError, match=r"Expected `str`, got `int` - at `\$.id`"):
        READER.json(b'{"id": 7}', Created)


def test_an_html_error_page_is_not_json_and_is_quoted_without_secrets():
    page = b"<html><body>502 Bad Gateway sekrit-key-123</body></html>"
    with pytest.raises(ProviderError, match="acme create: the answer is not JSON") as e:
        READER.json(page)
    assert "502 Bad Gateway" in str(e.value) and "sekrit" not in str(e.value)


def test_an_sdk_object_is_read_by_attribute():
    class Box:
        id = "sb-1"
        state = "running"

    assert READER.convert(Box(), Created) == Created("sb-1", "running")
    Box.id = None  # type: ignore[assignment]
    with pytest.raises(ProviderError, match=r"Expected `str`, got `null` - at `\$.id`"):
        READER.convert(Box(), Created)


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ({}, "has no `id`"),
        ({"id": 3}, "`id` in the answer is a int, not str"),
        ({"id": ""}, "`id` in the answer is empty"),
        ([{"id": "x"}], "is a list, not an object"),
    ],
)
def test_a_required_key_is_named(answer, said):
    with pytest.raises(ProviderError, match=said):
        READER.key(answer, "id")


def test_capped_bytes_stop_at_the_cap():
    capped = Capped(READER, 10, "the file", "max_download_mib")
    capped.add(b"0123456789")
    with pytest.raises(ProviderError, match="the file is larger than the cap of 10 bytes") as e:
        capped.add(b"x")
    assert e.value.code == "too_large" and "max_download_mib" in str(e.value)
    with pytest.raises(ProviderError, match="announced 11 bytes"):
        Capped(READER, 10, "the file").announced(11)


def test_an_endless_listing_stops_at_its_page_limit():
    listing = Listing(READER, max_pages=5)
    with pytest.raises(ProviderError, match="did not end within 5 pages") as e:
        for page in itertools.count():
            assert listing.more(f"token-{page}")
    assert e.value.code == "endless_listing" and listing.pages == 5


def test_a_listing_that_goes_round_in_circles_stops_at_once():
    listing = Listing(READER, max_pages=1000)
    assert listing.more("a") and listing.more("b")
    with pytest.raises(ProviderError, match="repeats a next-page token after 3 pages"):
        listing.more("a")
    items = Listing(READER, max_pages=1, items_per_page=2)
    items.item("x")
    with pytest.raises(ProviderError, match="names 'x' twice"):
        items.item("x")
    items.item("y")
    with pytest.raises(ProviderError, match=r"did not end within 1 pages \(2 items"):
        items.item("z")


def test_a_listing_without_a_next_token_ends():
    assert not Listing(READER, 1).more(None)


def test_limits_come_from_the_settings_and_refuse_nonsense():
    limits = AnswerLimits.from_settings({"max_pages": "3", "max_download_mib": 1})
    assert (limits.pages, limits.download_bytes) == (3, 1024 * 1024)
    assert AnswerLimits.from_settings(None) == AnswerLimits()
    for bad in (0, -1, 2.5, True, "lots"):
        with pytest.raises(ValueError, match="max_output_mib must be a positive whole number"):
            AnswerLimits.from_settings({"max_output_mib": bad})


@pytest.fixture
def server():
    routes = {}
    fake = FakeHTTPServer(lambda request: routes[request.path](), idle_timeout_s=5, name="answers")
    fake.routes = routes
    fake.start()
    yield fake
    fake.stop()


def endless():
    chunk = b"z" * 65536
    while True:
        yield chunk


def test_an_endless_body_is_read_only_up_to_the_cap(server):
    server.routes["/file"] = lambda: Response(200, endless())
    with make_client() as client, pytest.raises(ProviderError, match="larger than the cap"):
        send(client, "GET", server.url + "/file", READER, 1024 * 1024, "the file")


def test_a_lying_content_length_is_not_trusted(server):
    server.routes["/big"] = lambda: Response(200, b"y" * 5000, {"Content-Length": "5000"})
    server.routes["/small"] = lambda: Response(200, b"ok")
    with make_client() as client:
        with pytest.raises(ProviderError, match="announced 5000 bytes"):
            send(client, "GET", server.url + "/big", READER, 4096)
        answer = send(client, "GET", server.url + "/small", READER, 4096)
    assert answer.content == b"ok" and answer.status_code == 200


def test_a_compressed_body_is_capped_after_decoding(server):
    bomb = gzip.compress(b"\0" * (4 * 1024 * 1024))
    server.routes["/bomb"] = lambda: Response(200, bomb, {"Content-Encoding": "gzip"})
    server.routes["/json"] = lambda: Response(
        200, gzip.compress(b'{"id": "sb-1"}'), {"Content-Encoding": "gzip"}
    )
    with make_client() as client:
        with pytest.raises(ProviderError, match="larger than the cap of 1048576 bytes"):
            send(client, "GET", server.url + "/bomb", READER, 1024 * 1024)
        answer = send(client, "GET", server.url + "/json", READER, 1024)
    assert answer.json() == {"id": "sb-1"}


def test_transport_errors_are_left_to_the_caller():
    with make_client() as client, pytest.raises(httpx.ConnectError):
        send(client, "GET", "http://127.0.0.1:9/", READER, 10)
