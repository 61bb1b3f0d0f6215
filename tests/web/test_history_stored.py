"""History from stored points: a database filled run by run, each publication storing only its
own run's points, shows the same history, change flags, badges and feeds as a full recomputation
from every run's trials, to the last digit; and a publication reads no earlier run's trials
but those of the one run its series is compared with."""

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from boxbench.leaderboard import reliability
from boxbench.leaderboard.materialize import materialize
from boxbench.models import Aggregate, PublishedPair, Run, RunProgress, Scope
from tests.support.history import variant

pytestmark = pytest.mark.django_db

PAGES = [
    "/",
    "/providers/local/",
    "/providers/local/feed.xml",
    "/providers/local/cpu.svg",
    "/benchmarks/cpu/",
    "/benchmarks/create/",
]


def published_pages(client) -> tuple[dict, dict]:
    history = dict(Aggregate.objects.filter(scope=Scope.HISTORY).values_list("key", "data"))
    bodies = {}
    for path in PAGES:
        answer = client.get(path)
        bodies[path] = (answer.status_code, answer.content)
    return history, bodies


def test_history_filled_run_by_run_equals_a_full_recomputation(tmp_path, client, settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    variant(tmp_path / "1.jsonl", 1)
    variant(tmp_path / "2.jsonl", 2, slower={("local", "cpu"): 1 / 1.2})
    variant(tmp_path / "3.jsonl", 3, slower={("docker", "create"): 1.3})
    assert PublishedPair.objects.filter(points__isnull=True, finished=True).count() == 0
    incremental = published_pages(client)
    assert any(
        c["flagged"] for p in incremental[0].values() for s in p["series"] for c in s["changes"]
    )

    # Forget every stored point: the next publication computes them all from the trials.
    PublishedPair.objects.all().delete()
    RunProgress.objects.all().delete()
    materialize()
    assert RunProgress.objects.count() == 3
    assert published_pages(client) == incremental


def test_a_publication_reads_only_the_trials_its_series_compare(tmp_path):
    for number in range(1, 4):
        variant(tmp_path / f"{number}.jsonl", number)
    earliest = str(uuid.UUID(int=1 << 96, version=4)).replace("-", "")
    # Each run's attempts are counted once, at its own publication (which the variants skip).
    reliability.store_counts(list(Run.objects.filter(published=True)))
    with CaptureQueriesContext(connection) as queries:
        materialize()
    # Run 1 is neither a board's run nor one of the two compared: its trials are never read.
    # The trial table itself (the per-run tally table is small and read for every run).
    read = [q["sql"] for q in queries if '"boxbench_trial"' in q["sql"]]
    assert read and not [sql for sql in read if earliest in sql.replace("-", "")]
