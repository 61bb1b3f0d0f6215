"""The page cache lives apart from the queue's broker: a Redis of its own (BOXBENCH_CACHE_URL),
capped and evicting as docs/deployment.md shows, or the database table; `bench doctor` says
which and whether the Redis is capped."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from boxbench.cli.doctor import cache_check
from boxbench.env import same_redis
from tests.support.redis import cache_settings, own_redis

ROOT = Path(__file__).resolve().parents[2]
SHOW = (
    "import json, django; django.setup(); from django.conf import settings; "
    "c = settings.CACHES['default']; print(json.dumps([c['BACKEND'], str(c['LOCATION'])]))"
)


def cache_of(tmp_path, **env) -> subprocess.CompletedProcess:
    base = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "BOXBENCH_VAR_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "boxbench.settings",
    }
    return subprocess.run(
        [sys.executable, "-c", SHOW], cwd=ROOT, env={**base, **env}, capture_output=True, text=True
    )


def test_the_brokers_redis_alone_leaves_the_page_cache_in_the_database(tmp_path):
    result = cache_of(tmp_path, BOXBENCH_REDIS_URL="redis://127.0.0.1:6379/0")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        "django.core.cache.backends.db.DatabaseCache",
        "boxbench_cache",
    ]


def test_the_page_cache_uses_the_redis_named_for_it(tmp_path):
    result = cache_of(
        tmp_path,
        BOXBENCH_REDIS_URL="redis://127.0.0.1:6379/0",
        BOXBENCH_CACHE_URL="redis://127.0.0.1:6380/0",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        "boxbench.cache_guard.GuardedRedisCache",
        "redis://127.0.0.1:6380/0",
    ]


def test_the_page_cache_may_not_name_the_brokers_database(tmp_path):
    result = cache_of(
        tmp_path,
        BOXBENCH_REDIS_URL="redis://127.0.0.1:6379/0",
        BOXBENCH_CACHE_URL="redis://localhost:6379",
    )
    assert result.returncode != 0
    assert "BOXBENCH_CACHE_URL names the queue's Redis database" in result.stderr


def test_it_compares_redis_urls_by_server_and_database():
    assert same_redis("redis://localhost:6379", "redis://127.0.0.1:6379/0")
    assert same_redis("redis://:secret@cache:6379/2", "redis://cache/2")
    assert same_redis("unix:///run/r.sock?db=1", "unix:///run/r.sock?db=1")
    assert not same_redis("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/1")
    assert not same_redis("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6380/0")
    assert not same_redis("unix:///run/r.sock?db=1", "unix:///run/r.sock")


def documented_redis_conf() -> list[str]:
    """The cache's redis.conf lines of docs/deployment.md, but its address: the test's server
    listens on a socket of its own."""
    text = (ROOT / "docs" / "deployment.md").read_text()
    block = re.search(r"```redis\n(.*?)```", text, re.S).group(1)
    lines = [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
    return [line for line in lines if not line.startswith(("port ", "bind "))]


def test_doctor_passes_the_documented_cache_redis(settings, tmp_path):
    conf = documented_redis_conf()
    assert "maxmemory-policy allkeys-lru" in conf and any(c.startswith("maxmemory ") for c in conf)
    with own_redis(tmp_path, *conf) as url:
        settings.CACHE_URL, settings.CACHES = url, cache_settings(url)
        name, ok, detail = cache_check()
    assert ok, detail
    assert re.search(r"maxmemory \d+ MiB, allkeys-lru$", detail), detail


def test_doctor_fails_a_cache_redis_without_a_cap_or_eviction(settings, tmp_path):
    with own_redis(tmp_path, "maxmemory 0", "maxmemory-policy noeviction") as url:
        settings.CACHE_URL, settings.CACHES = url, cache_settings(url)
        name, ok, detail = cache_check()
    assert not ok
    assert "no memory cap" in detail and "noeviction refuses writes when full" in detail


def test_doctor_fails_a_cache_on_the_brokers_server_and_a_cache_that_is_down(settings, tmp_path):
    with own_redis(tmp_path, "maxmemory 64mb", "maxmemory-policy allkeys-lru") as url:
        settings.CACHE_URL, settings.CACHES = url, cache_settings(url)
        settings.REDIS_URL = url.replace("db=0", "db=1")
        name, ok, detail = cache_check()
    assert not ok and "the queue's Redis server" in detail
    settings.CACHE_URL = "redis://127.0.0.1:1/0"
    settings.CACHES = cache_settings(settings.CACHE_URL)
    name, ok, detail = cache_check()
    assert not ok and "ConnectionError" in detail


@pytest.mark.parametrize("broker", ["", "redis://127.0.0.1:6379/0"])
def test_doctor_says_the_page_cache_is_the_database_table(settings, broker):
    settings.CACHE_URL, settings.REDIS_URL = "", broker
    name, ok, detail = cache_check()
    assert ok and detail.startswith("database table boxbench_cache")
    assert ("the queue's Redis is not shared" in detail) == bool(broker)
