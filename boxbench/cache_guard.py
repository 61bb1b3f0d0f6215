"""The shared cache, safe to lose: a read or write that fails (Redis down, full, refusing) is a
miss or a write not made, never an error for the request.

Everything kept in the shared cache can be had again without it: a page is rendered again, the
publication version read from the database, a session from its table (cached_db), an audience
computed afresh. So a failing cache costs speed, never a 500. The failure is logged once, when
the cache first fails and then at most every LOG_EVERY_S with the number of failures since;
after a failure it is not asked for RETRY_AFTER_S, so an outage in which every call waits out
its socket timeout does not add that wait to every request.

What an outage delays: a publication or a permission change that could not tell the cache (it
forgets the publication version and replaces the audience generation there) takes effect once
the version expires (10 s) or the session's memo ages out (60 s) after the cache is back; a
session ended meanwhile may still be in the cache until that entry expires.

Only reads and writes are guarded: `incr`, `decr` and `clear` keep their errors (a missing key's
ValueError is part of their meaning, and clearing is an operator's deliberate act).
"""

import logging
import threading
import time
from urllib.parse import urlsplit

from django.core.cache.backends.base import DEFAULT_TIMEOUT

from boxbench.redis_cache import RedisCache

logger = logging.getLogger("boxbench.cache")
RETRY_AFTER_S = 5.0
LOG_EVERY_S = 600.0
clock = time.monotonic
_lock = threading.Lock()
# Per process and cache place (Django gives each thread its own backend object): when a cache
# that failed may be asked again, when its failure was last logged, and how often it failed since.
_down_until: dict[str, float] = {}
_logged_at: dict[str, float] = {}
_failures: dict[str, int] = {}


class Guarded:
    """Mixin for a cache backend: its reads and writes never raise."""

    def _place(self) -> str:
        place = getattr(self, "_guard_place", None)
        if place is None:
            servers = getattr(self, "_servers", None) or [""]
            # Host and port only: a URL's password never reaches the log.
            where = ",".join(_without_credentials(s) for s in servers)
            place = self._guard_place = f"{type(self).__name__} {where}".strip()
        return place

    def _guarded(self, default, call, *args, **kwargs):
        place = self._place()
        until = _down_until.get(place)
        if until is not None and clock() < until:
            return default
        try:
            result = call(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - any failure of the cache is a miss
            _failed(place, exc)
            return default
        if until is not None:
            _down_until.pop(place, None)
        return result

    def get(self, key, default=None, version=None):
        return self._guarded(default, super().get, key, default, version)  # type: ignore[misc]

    def get_many(self, keys, version=None):
        return self._guarded({}, super().get_many, keys, version)  # type: ignore[misc]

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return self._guarded(None, super().set, key, value, timeout, version)  # type: ignore[misc]

    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        return self._guarded(list(data), super().set_many, data, timeout, version)  # type: ignore[misc]

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return self._guarded(False, super().add, key, value, timeout, version)  # type: ignore[misc]

    def delete(self, key, version=None):
        return self._guarded(False, super().delete, key, version)  # type: ignore[misc]

    def delete_many(self, keys, version=None):
        return self._guarded(None, super().delete_many, keys, version)  # type: ignore[misc]

    def has_key(self, key, version=None):
        return self._guarded(False, super().has_key, key, version)  # type: ignore[misc]

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        return self._guarded(False, super().touch, key, timeout, version)  # type: ignore[misc]


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return f"unix:{parts.path}"
    return f"{parts.hostname}:{parts.port or 6379}" if parts.hostname else ""


def _failed(place: str, exc: Exception) -> None:
    now = clock()
    with _lock:
        _down_until[place] = now + RETRY_AFTER_S
        _failures[place] = _failures.get(place, 0) + 1
        last = _logged_at.get(place)
        due = last is None or now - last >= LOG_EVERY_S
        if due:
            _logged_at[place], count = now, _failures.pop(place)
    if due:
        logger.warning(
            "the shared cache (%s) failed: %s: %s; pages are rendered uncached while it fails "
            "(it is asked again every %g s; %d failure(s) since the last report, the next "
            "report in %g s at the earliest)",
            place,
            type(exc).__name__,
            exc,
            RETRY_AFTER_S,
            count,
            LOG_EVERY_S,
        )


class GuardedRedisCache(Guarded, RedisCache):
    """The page cache on its own Redis (settings.CACHE_URL)."""
