"""A page cache that fails (its Redis down, full, refusing writes) never makes a 500: the page is
rendered uncached and the failure logged once (boxbench/cache_guard.py)."""

import logging

import pytest
import redis

from boxbench import cache_guard
from tests.support.redis import cache_settings, own_redis
from tests.web import factory

pytestmark = pytest.mark.django_db
PAGES = [
    "/",
    "/benchmarks/deepswe/",
    "/benchmarks/deepswe/units/trace-a/",
    "/providers/boat/",
    f"/runs/{factory.RUN_ID}/",
    "/scores.csv",
]
NOTHING_LISTENS = "redis://127.0.0.1:1/0"  # port 1: the connection is refused at once


@pytest.fixture(autouse=True)
def forget_outages(monkeypatch):
    # Each test starts with a cache that has not failed in this process yet.
    for state in ("_down_until", "_logged_at", "_failures"):
        monkeypatch.setattr(cache_guard, state, {})


def cache_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "boxbench.cache"]


def test_pages_are_served_uncached_while_the_cache_redis_is_down(
    client, staff_client, published_run, settings, caplog
):
    settings.CACHES = cache_settings(NOTHING_LISTENS)
    caplog.set_level(logging.WARNING, logger="boxbench.cache")
    for _ in range(2):
        for path in PAGES:
            response = staff_client.get(path)
            assert response.status_code == 200, path
    logged = cache_warnings(caplog)
    assert len(logged) == 1, logged
    assert "failed: ConnectionError" in logged[0] and "127.0.0.1:1" in logged[0]


def test_a_full_redis_that_refuses_writes_costs_a_render_not_an_error(
    client, published_run, settings, caplog, tmp_path
):
    # noeviction with a cap below what an empty server uses: every write is refused (OOM).
    with own_redis(tmp_path, "maxmemory 1", "maxmemory-policy noeviction") as url:
        settings.CACHES = cache_settings(url)
        caplog.set_level(logging.WARNING, logger="boxbench.cache")
        first = client.get("/")
        again = client.get("/")
    assert first.status_code == again.status_code == 200
    assert first.content == again.content
    logged = cache_warnings(caplog)
    assert len(logged) == 1 and "OutOfMemoryError" in logged[0], logged


def test_it_asks_the_cache_again_after_a_pause_and_logs_one_report_meanwhile(
    client, published_run, settings, caplog, tmp_path, monkeypatch
):
    now = [1000.0]
    monkeypatch.setattr(cache_guard, "clock", lambda: now[0])
    caplog.set_level(logging.WARNING, logger="boxbench.cache")
    with own_redis(tmp_path, "maxmemory 1", "maxmemory-policy noeviction") as url:
        settings.CACHES = cache_settings(url)
        server = redis.Redis.from_url(url)
        assert client.get("/").status_code == 200  # a write refused: the cache is paused
        server.config_set("maxmemory", "64mb")  # room again
        assert client.get("/").status_code == 200
        assert server.dbsize() == 0  # not asked during the pause
        now[0] += cache_guard.RETRY_AFTER_S
        assert client.get("/").status_code == 200
        assert server.dbsize() > 0  # asked again: the version and the page are kept
        server.config_set("maxmemory", "1")
        for _ in range(3):
            now[0] += cache_guard.RETRY_AFTER_S
            assert client.get("/").status_code == 200
    assert len(cache_warnings(caplog)) == 1  # one report until LOG_EVERY_S has passed
    now[0] += cache_guard.LOG_EVERY_S
    cache_guard._failed("GuardedRedisCache here", RuntimeError("still full"))
    logged = cache_warnings(caplog)
    assert len(logged) == 2 and "still full" in logged[1], logged
