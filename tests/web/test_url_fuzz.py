"""Hostile addresses, as every persona: every route's path parameters and the query parameters
pages and the admin read, set to huge, negative, NUL, unicode, traversal, very long and
malformed values. Whatever the answer (400, 404, a redirect), never a 500."""

import pytest
from django.test import Client

from tests.web.personas import PERSONAS, World, hostile_paths, login, urls

pytestmark = pytest.mark.django_db

HOSTILE = [
    "99999999999999999",
    "99999999999999999999999999",
    "-1",
    "0",
    "%00",
    "%C3%A9%F0%9F%92%A5%E2%80%AE",  # é, an emoji and a right-to-left override
    "..%2F..%2Fetc%2Fpasswd",
    "x" * 3000,
    "not-a-uuid",
    "00000000-0000-0000-0000-000000000000",
    "%FF%FE",  # not UTF-8
    "1e308",
]
QUERY_PARAMS = [
    "page",
    "provider",
    "unit",
    "open",
    "a",
    "b",
    "p",
    "q",
    "o",
    "e",
    "_to_field",
    "next",
]


def hostile_queries(addresses) -> list[tuple[str, str]]:
    """Two hostile query parameters per URL, parameter and value rotating so that every
    parameter meets every value somewhere (2 x URLs >= parameters x values)."""
    pairs = len(QUERY_PARAMS) * len(HOSTILE)
    assert 2 * len(addresses) >= pairs
    out = []
    for k in range(2 * len(addresses)):
        key, url = addresses[k % len(addresses)]
        param = QUERY_PARAMS[k % len(QUERY_PARAMS)]
        value = HOSTILE[(k // len(QUERY_PARAMS)) % len(HOSTILE)]
        joined = "&" if "?" in url else "?"
        out.append((f"{key} ?{param}={value[:20]}", f"{url}{joined}{param}={value}"))
    return out


# One test per persona, so the workers share the ~5,000 requests.
@pytest.mark.parametrize("persona", PERSONAS)
def test_no_hostile_address_answers_500_to_a_persona(published_run, capsys, persona):
    world = World(published_run)
    addresses = hostile_paths(world, HOSTILE) + hostile_queries(urls(world))
    client = Client(raise_request_exception=False)
    tried, errors = 0, []
    login(client, persona)
    for key, url in addresses:
        response = client.get(url)
        if response.streaming:
            # Read to the end, as a visitor does, so the response is closed (the test client
            # closes a streamed one only then) and the raw export's lock is released.
            b"".join(response.streaming_content)
        tried += 1
        if response.status_code >= 500:
            errors.append((key, response.status_code))
    with capsys.disabled():
        print(f"\nURL fuzz as {persona}: {tried} hostile URLs, {len(errors)} answers 500")
    assert errors == [], "\n".join(map(str, errors[:50]))
