"""The page cache is keyed on each page's known, checked parameters: what an anonymous visitor
adds to an address (unknown parameters, repeats, odd numbers) is redirected to the canonical
address or refused, and never adds an entry; the overview's `open` rows, which only its script
reads, are left out of the key."""

import contextlib

import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection

from boxbench.models import Aggregate, Scope
from boxbench.views import score_tables
from tests.support.redis import cache_settings, own_redis
from tests.web import factory

pytestmark = pytest.mark.django_db
RUN_URL = f"/runs/{factory.RUN_ID}/"


def openable() -> list[str]:
    rows = score_tables.score_rows(Aggregate.objects.page(Scope.OVERVIEW))
    return [r["path"] for r in rows if r["level"] in ("section", "benchmark")]


def canonical_pages() -> list[str]:
    return [
        "/",
        "/benchmarks/deepswe/",
        "/benchmarks/deepswe/?unit=trace-b",
        "/benchmarks/deepswe/units/trace-a/",
        "/benchmarks/create/units/create/?provider=docker",
        "/providers/boat/",
        RUN_URL,
        "/scores.csv",
        "/benchmarks/deepswe.csv",
        "/methodology/",
        "/compare/?a=local&b=docker",
    ]


def junk(i: int, page: str) -> str:
    """The i-th of eight kinds of junk added to a canonical page's address."""
    sep = "&" if "?" in page else "?"
    section = next(p for p in openable() if "/" not in p)
    return (
        page
        + sep
        + [
            f"utm={i}",
            f"open={'x' * 4000}{i}",
            f"unit=trace-b&unit=trace-a&n={i}",
            f"page=0{i}",
            f"provider=nobody-{i}",
            f"open={section},{section},nowhere-{i}",
            f"view=&unit=&i={i}",
            f"evidence={i}",
        ][i % 8]
    )


class Entries:
    """How many entries the page cache holds, on the database table or on Redis."""

    def __init__(self, url: str = ""):
        self.redis = redis.Redis.from_url(url) if url else None

    def __call__(self) -> int:
        if self.redis is not None:
            return self.redis.dbsize()
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT COUNT(*) FROM {django_settings.CACHE_TABLE}")
            return cursor.fetchone()[0]


def two_hundred_junk_requests(client, pages: list[str]) -> list[tuple[str, int]]:
    answers = []
    for i in range(200):
        address = junk(i, pages[i % len(pages)])
        response = client.get(address)
        answers.append((address, response.status_code))
        if response.status_code == 302:
            # The redirect's target is canonical: a page already kept, served as it is.
            again = client.get(response["Location"])
            assert again.status_code == 200, (address, response["Location"], again.status_code)
    return answers


@pytest.mark.parametrize("store", ["database", "redis"])
def test_junk_in_addresses_adds_no_page_cache_entry(
    client, published_run, settings, tmp_path, store
):
    if store == "redis":
        place = own_redis(tmp_path, "maxmemory 64mb", "maxmemory-policy allkeys-lru")
    else:
        place = contextlib.nullcontext("")
    with place as url:
        if url:
            settings.CACHES = cache_settings(url)
        entries = Entries(url or "")
        pages = canonical_pages()
        for page in pages:
            assert client.get(page).status_code == 200, page
        kept = entries()
        answers = two_hundred_junk_requests(client, pages)
        assert entries() == kept
    # The overview keeps what `open` holds (its script reads it): the same page, one entry.
    assert {status for address, status in answers if not address.startswith("/?open=")} <= {
        302,
        404,
    }
    assert sum(status == 302 for _, status in answers) > 100


def test_the_page_cache_holds_the_canonical_pages_and_nothing_more(client, published_run):
    entries = Entries()
    before = entries()
    pages = canonical_pages()
    for page in pages:
        assert client.get(page).status_code == 200, page
    # One entry per page, and the publication version.
    assert entries() == before + len(pages) + 1


def test_unknown_repeated_and_empty_parameters_are_redirected(client, published_run):
    cases = {
        "/?utm=1": "/",
        "/benchmarks/deepswe/?unit=trace-b&utm=x": "/benchmarks/deepswe/?unit=trace-b",
        "/benchmarks/deepswe/?unit=trace-b&unit=trace-a": "/benchmarks/deepswe/?unit=trace-b",
        "/benchmarks/deepswe/?view=&unit=trace-b": "/benchmarks/deepswe/?unit=trace-b",
        "/benchmarks/deepswe/?unit=trace-b&view=time": "/benchmarks/deepswe/?unit=trace-b",
        "/benchmarks/deepswe/units/trace-a/?page=1": "/benchmarks/deepswe/units/trace-a/",
        f"{RUN_URL}?evidence=2": RUN_URL,  # a visitor has no evidence pages
        "/providers/boat/?open=a": "/providers/boat/",
        "/compare/?b=docker&a=local&a=boat": "/compare/?b=docker&a=local",
    }
    for asked, target in cases.items():
        response = client.get(asked)
        assert (response.status_code, response["Location"]) == (302, target), asked
        assert client.head(asked).status_code == 302


def test_open_rows_share_the_overviews_one_entry(client, published_run):
    """Which rows are open is only the page's script's business: every subset of them, and
    any junk in `open`, is the same cached page (one entry), kept in the address as asked."""
    entries = Entries()
    assert client.get("/").status_code == 200
    kept = entries()
    rows = openable()
    subsets = [",".join(rows[:i]) for i in range(1, len(rows) + 1)]
    subsets += [",".join(reversed(rows)), f"gone,{'y' * 3000}", ",".join(rows[1::2])]
    first = client.get("/").content
    for subset in subsets:
        response = client.get("/", {"open": subset})
        assert response.status_code == 200
        assert response.content == first
    assert entries() == kept


def test_values_that_name_nothing_are_not_found(client, staff_client, published_run):
    for address in [
        "/benchmarks/create/units/create/?provider=nobody",
        "/benchmarks/deepswe/units/trace-a/?page=01",
        "/benchmarks/deepswe/units/trace-a/?page=%2B1",
        "/benchmarks/deepswe/units/trace-a/?page=1_0",
        "/benchmarks/deepswe/?view=sideways",
    ]:
        assert client.get(address).status_code == 404, address
    assert staff_client.get(f"{RUN_URL}?evidence=01").status_code == 404
    assert staff_client.get(f"{RUN_URL}?evidence=1")["Location"] == RUN_URL  # the default


def test_a_parameter_only_the_pages_script_reads_stays_and_shares_the_entry(client, published_run):
    entries = Entries()
    assert client.get("/benchmarks/deepswe/units/trace-a/").status_code == 200
    kept = entries()
    response = client.get("/benchmarks/deepswe/units/trace-a/?stages=setup%2Creplay")
    assert response.status_code == 200
    assert entries() == kept
