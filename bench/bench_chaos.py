"""Cost of the reliability endpoints and of orphan recovery on a large PostgreSQL database.

    .venv/bin/python bench/bench_chaos.py [--trials 200000] [--orphans 200] [--database-url URL]

Fills a fresh database with planned runs of the Create benchmark (10,000 trials each), most of
them finished, some queued and `--orphans` running for an hour, then prints:
- the time of one /metrics collection (its eight queries) and of rendering it, p50 and max of 20;
- /healthz through the Django test client, p50 and p99 of 200 requests;
- one `recover_orphans` pass over the orphans (their sandboxes are listed on an empty local
  provider root, so this is the database side of recovery).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.bench_rawdata import reset_database  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/boxbench_chaos"
PER_RUN = 10_000


def fill(total: int, orphans: int) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from boxbench.models import RunStatus, Trial, TrialState
    from runner.plan import plan_run

    started = time.monotonic()
    for index in range(max(1, total // PER_RUN)):
        run = plan_run(
            f"chaos {index}", benchmarks=["create"], providers=["local"], trials=PER_RUN, seed=index
        )
        run.transition(RunStatus.RUNNING)
        run.trials.filter(seq__lte=PER_RUN - 100).update(
            state=TrialState.DONE, outcome="success", started_at=timezone.now()
        )
    long_ago = timezone.now() - timedelta(hours=1)
    queued = Trial.objects.filter(state=TrialState.QUEUED).values_list("pk", flat=True)[:orphans]
    Trial.objects.filter(pk__in=list(queued)).update(
        state=TrialState.RUNNING, started_at=long_ago, job_host="lost"
    )
    print(f"filled {Trial.objects.count():,} trials in {time.monotonic() - started:.1f} s")


def timings(call, repeat: int) -> list[float]:
    found = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        found.append((time.perf_counter() - started) * 1000)
    return sorted(found)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200_000)
    parser.add_argument("--orphans", type=int, default=200)
    parser.add_argument("--database-url", default=DEFAULT_URL)
    args = parser.parse_args()
    reset_database(args.database_url)
    os.environ["DATABASE_URL"] = args.database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "boxbench.settings")
    import django

    django.setup()
    from django.test import Client

    from boxbench import metrics
    from runner import recovery
    from runner.declarations import get_declaration
    from runner.providers.local import LocalProvider

    fill(args.trials, args.orphans)
    collect = timings(metrics.collect, 20)
    families = metrics.collect()
    render = timings(lambda: metrics.render(families), 20)
    print(f"/metrics collect: p50 {statistics.median(collect):.1f} ms, max {collect[-1]:.1f} ms")
    print(f"/metrics render:  p50 {statistics.median(render):.2f} ms")
    client = Client(HTTP_HOST="127.0.0.1")
    assert client.get("/healthz").status_code == 200
    health = timings(lambda: client.get("/healthz"), 200)
    p99 = health[int(len(health) * 0.99) - 1]
    print(f"/healthz: p50 {statistics.median(health):.2f} ms, p99 {p99:.2f} ms")
    with tempfile.TemporaryDirectory() as root:
        local = LocalProvider(get_declaration("local"), {"root": root})
        started = time.perf_counter()
        report = recovery.recover_orphans(provider_factory=lambda slug: local)
        elapsed = time.perf_counter() - started
    print(f"recover_orphans: {report.summary()} in {elapsed * 1000:.0f} ms")


if __name__ == "__main__":
    main()
