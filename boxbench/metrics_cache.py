"""One /metrics rendering shared by every web process for at most MAX_AGE_S seconds.

A scrape costs eight queries (metrics.collect); twenty scrapers at once would run them twenty
times over. Instead the rendered text is kept in the shared cache with the wall time it was
collected at, and every scrape within MAX_AGE_S of that time is answered from it, with its age
as `boxbench_metrics_age_seconds`. The first scrape after REFRESH_AFTER_S collects anew (one
process at a time, by a lock in the cache) while the others keep answering from the previous
text; a text older than MAX_AGE_S is never served, whoever holds the lock.
"""

import time

from django.core.cache import cache

from boxbench import metrics

MAX_AGE_S = 2.0
REFRESH_AFTER_S = 1.0
KEY = "metrics:text"
LOCK_KEY = "metrics:collecting"
clock = time.time  # wall time: the text's age is read by every process


def scrape() -> str:
    """The metrics text with its age: shared while young enough, else collected now."""
    entry = cache.get(KEY)
    now = clock()
    age = now - entry[1] if entry else None
    if age is None or not 0 <= age < MAX_AGE_S:
        return _collect_now()
    if age >= REFRESH_AFTER_S and cache.add(LOCK_KEY, 1, timeout=int(MAX_AGE_S) + 1):
        try:
            return _collect_now()
        finally:
            cache.delete(LOCK_KEY)
    return entry[0] + _age_text(age)


def _collect_now() -> str:
    collected_at = clock()
    text = metrics.render(metrics.collect())
    # The age check in scrape() decides what is served, by the collection's own timestamp; the
    # expiry only clears a text nobody asked for since.
    cache.set(KEY, (text, collected_at), timeout=60)
    return text + _age_text(0.0)


def _age_text(age: float) -> str:
    family = metrics.Family(
        "boxbench_metrics_age_seconds",
        "gauge",
        f"Seconds since these figures were collected; web processes share one collection for "
        f"at most {MAX_AGE_S:g} s.",
    )
    family.add(round(age, 3))
    return metrics.render([family])
