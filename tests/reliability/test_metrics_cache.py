"""/metrics shares one collection between scrapes, never older than metrics_cache.MAX_AGE_S."""

import pytest
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from boxbench import metrics_cache
from runner.plan import plan_run
from tests.support.reliability import parse

pytestmark = pytest.mark.django_db
QUEUE = ("boxbench_queue_depth", (("provider", "local"),))
AGE = ("boxbench_metrics_age_seconds", ())


@pytest.fixture
def clock(monkeypatch):
    """A wall clock the test moves: `clock.now` seconds."""
    cache.delete_many([metrics_cache.KEY, metrics_cache.LOCK_KEY])

    class Clock:
        now = 1_000_000.0

    monkeypatch.setattr(metrics_cache, "clock", lambda: Clock.now)
    yield Clock
    cache.delete_many([metrics_cache.KEY, metrics_cache.LOCK_KEY])


def queue_trials(trials):
    plan_run(
        "metrics", benchmarks=["create"], providers=["local"], trials=trials, seed=1, concurrency=1
    )


def scrape():
    """The parsed scrape, and how many queries it sent besides the shared cache's own."""
    with CaptureQueriesContext(connection) as captured:
        text = metrics_cache.scrape()
    table = settings.CACHES["default"]["LOCATION"]
    sent = [q for q in captured.captured_queries if table not in q["sql"]]
    sent = [q for q in sent if "SAVEPOINT" not in q["sql"]]
    return parse(text), len(sent)


def test_it_answers_scrapes_within_the_refresh_time_from_one_collection(clock):
    queue_trials(4)
    first, queries = scrape()
    assert first[QUEUE] == 4 and first[AGE] == 0 and queries == 8
    queue_trials(2)
    clock.now += 0.5
    shared, queries = scrape()
    assert shared[QUEUE] == 4 and shared[AGE] == 0.5 and queries == 0


def test_it_collects_again_after_the_refresh_time(clock):
    queue_trials(4)
    scrape()
    queue_trials(2)
    clock.now += metrics_cache.REFRESH_AFTER_S
    again, queries = scrape()
    assert again[QUEUE] == 6 and again[AGE] == 0 and queries == 8


def test_it_never_serves_figures_older_than_the_bound_while_another_process_collects(clock):
    queue_trials(4)
    scrape()
    queue_trials(2)
    assert cache.add(metrics_cache.LOCK_KEY, 1)  # another process is collecting
    clock.now += 1.5
    meanwhile, queries = scrape()
    assert meanwhile[QUEUE] == 4 and meanwhile[AGE] == 1.5 and queries == 0
    clock.now += metrics_cache.MAX_AGE_S - 1.5
    bounded, queries = scrape()
    assert bounded[QUEUE] == 6 and bounded[AGE] == 0 and queries == 8


def test_it_collects_when_the_shared_text_is_lost(clock):
    queue_trials(4)
    scrape()
    queue_trials(2)
    cache.clear()
    clock.now += 0.1
    assert scrape()[0][QUEUE] == 6


def test_it_shows_the_age_on_the_endpoint(client, settings, clock):
    settings.METRICS_TOKEN = "s3cret-token"
    headers = {"Authorization": "Bearer s3cret-token"}
    client.get(reverse("metrics"), headers=headers)
    clock.now += 0.25
    text = client.get(reverse("metrics"), headers=headers).content.decode()
    assert "# TYPE boxbench_metrics_age_seconds gauge" in text
    assert parse(text)[AGE] == 0.25
