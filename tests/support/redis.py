"""A Redis server of a test's own, on a unix socket under its tmp_path: the shared Redis on
127.0.0.1:6379 is never reconfigured or flushed by a test."""

import contextlib
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import redis

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
START_DEADLINE_S = 30


@contextlib.contextmanager
def own_redis(directory: Path, *config: str):
    """Start redis-server with `config` lines (redis.conf syntax) on a socket in `directory`;
    yield its URL (database 0). Persistence is off; the server stops when the block ends."""
    if not Path(REDIS_SERVER).exists():
        pytest.skip("redis-server is not installed")
    socket = directory / "redis.sock"
    conf = directory / "redis.conf"
    lines = [
        "port 0",
        f"unixsocket {socket}",
        "unixsocketperm 700",
        'save ""',
        "appendonly no",
        f"dir {directory}",
        *config,
    ]
    conf.write_text("\n".join(lines) + "\n")
    server = subprocess.Popen(
        [REDIS_SERVER, str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    url = f"unix://{socket}?db=0"
    try:
        deadline = time.monotonic() + START_DEADLINE_S
        while True:
            if server.poll() is not None:
                pytest.fail(f"redis-server exited with {server.returncode} (config {conf})")
            try:
                if socket.exists() and redis.Redis.from_url(url).ping():
                    break
            except redis.exceptions.ConnectionError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"redis-server did not answer within {START_DEADLINE_S} s")
            time.sleep(0.05)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def cache_settings(url: str) -> dict:
    """settings.CACHES for a page cache on `url`, as boxbench/settings.py writes them."""
    return {
        "default": {
            "BACKEND": "boxbench.cache_guard.GuardedRedisCache",
            "LOCATION": url,
            "KEY_PREFIX": "boxbench",
            "OPTIONS": {"socket_connect_timeout": 1.0, "socket_timeout": 2.0},
        }
    }
