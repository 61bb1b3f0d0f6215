"""The shared page cache on Redis (boxbench/redis_cache.py), against the real Redis the test
command starts: one client per server and process, safe across threads."""

import socket
import threading

import pytest
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache

from boxbench.redis_cache import RedisCache

URL = "redis://127.0.0.1:6379/12"  # a database number of its own


@pytest.fixture
def redis_cache():
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=1).close()
    except OSError:
        pytest.skip("no Redis on 127.0.0.1:6379")
    backend = RedisCache(URL, {"KEY_PREFIX": "test-redis-cache"})
    backend.clear()
    yield backend
    backend.clear()


def test_it_asks_through_one_client_where_djangos_builds_one_per_call(redis_cache):
    assert redis_cache._cache.get_client() is redis_cache._cache.get_client(write=True)
    django_own = DjangoRedisCache(URL, {})
    assert django_own._cache.get_client() is not django_own._cache.get_client()


def test_it_keeps_each_threads_values_apart(redis_cache):
    problems = []

    def work(n: int):
        for i in range(50):
            key = f"thread-{n}-{i}"
            redis_cache.set(key, {"thread": n, "i": i})
            if redis_cache.get(key) != {"thread": n, "i": i}:
                problems.append(key)
        found = redis_cache.get_many([f"thread-{n}-{i}" for i in range(50)])
        if len(found) != 50 or redis_cache.incr(f"thread-{n}-count", 1) is None:
            problems.append(n)

    with pytest.raises(ValueError):
        redis_cache.incr("absent")  # a missing key is Django's error, as with its own client
    for n in range(8):
        redis_cache.set(f"thread-{n}-count", 0)
    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []
    assert redis_cache.get_many([f"thread-{n}-count" for n in range(8)]) == {
        f"thread-{n}-count": 1 for n in range(8)
    }
    assert redis_cache.delete("thread-0-0") and redis_cache.get("thread-0-0") is None
