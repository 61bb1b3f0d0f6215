"""Publication time of one new run against the number of runs published before it.

    .venv/bin/python bench/bench_history.py [--earlier 0,10,100,1000] [--trials 20000]
        [--earlier-trials-per-cell 3] [--repeat 3] [--database-url URL]

Fills a fresh PostgreSQL database with a synthetic run of --trials trials (bench/synthetic.py),
left unpublished, then publishes earlier runs (each --earlier-trials-per-cell trials per provider
and unit, a week apart, materialized as they would have been at their own publications) until
each count of --earlier is reached. At each count it publishes the new run and times the
publication's materialization (every page rebuilt, history included), --repeat times, undoing
the publication between repetitions; beside it, in the same process at the same count:

- the statistics floor: the new run's finished trials read and every cell's statistics computed
  with the same stats/ functions (medians, tails, bootstrap intervals, stage bars: summarize),
  writing nothing: what a publication cannot do without;
- the ratio of the publication to the floor, and to the publication with no earlier run.

Medians of the repetitions are printed, with the load average: the machine may be shared.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.bench_rawdata import reset_database

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/boxbench_history"

CHILD = r"""
import json, os, statistics, sys, tempfile, time
from datetime import timedelta
from pathlib import Path
import django
django.setup()
from django.utils import timezone
from bench import synthetic
from boxbench.leaderboard.cells import group_cells, load_trials
from boxbench.leaderboard.materialize import materialize
from boxbench.leaderboard.stored import method_of
from boxbench.models import Benchmark, PublishedPair, Run, RunProgress, Trial
from boxbench.rawdata import import_jsonl
from stats import summary

counts = [int(c) for c in sys.argv[1].split(",")]
trials, per_cell, repeat = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
cells = sum(b[8] for b in synthetic.BENCHMARKS) * len(synthetic.PROVIDERS)
declared = max(1, trials // cells)


def imported(lines, tmp, name):
    path = Path(tmp) / f"{name}.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    run = import_jsonl(str(path)).run
    path.unlink()
    return run


def floor(run):
    # The statistics every cell of the run needs, from its trials, writing nothing.
    start = time.perf_counter()
    for benchmark in Benchmark.objects.all():
        by_provider = {
            pid: run for pid in Trial.objects.filter(run=run, benchmark=benchmark)
            .values_list("provider_id", flat=True).distinct().order_by()
        }
        if not by_provider:
            continue
        found, measurements = load_trials(benchmark, by_provider)
        stages = [s for s in benchmark.stage_names if isinstance(s, str)]
        method = method_of(benchmark)
        for cell in group_cells(benchmark, found, measurements, stages).values():
            summary.summarize(cell.samples, method)
    return time.perf_counter() - start


def publication(run):
    Run.objects.filter(id=run.id).update(published=True, published_at=timezone.now())
    start = time.perf_counter()
    materialize()
    elapsed = time.perf_counter() - start
    # Undone, so that the next repetition publishes it afresh.
    Run.objects.filter(id=run.id).update(published=False, published_at=None)
    PublishedPair.objects.filter(run=run).delete()
    RunProgress.objects.filter(run=run).delete()
    return elapsed


with tempfile.TemporaryDirectory() as tmp:
    new = imported(synthetic.synthetic_run(trials=trials, name="new"), tmp, "new")
    done, now = 0, timezone.now()
    for count in counts:
        start = time.perf_counter()
        for i in range(done, count):
            lines = synthetic.synthetic_run(
                trials=cells * per_cell, seed=1000 + i, name=f"earlier-{i}",
                declared_per_unit=declared,
            )
            run = imported(lines, tmp, f"earlier-{i}")
            when = now - timedelta(days=7 * (10_000 - i))
            Run.objects.filter(id=run.id).update(published=True, published_at=when)
        if count > done:
            materialize()  # what each earlier publication stored, stored once here
        filled = time.perf_counter() - start
        done = count
        times = [publication(new) for _ in range(repeat)]
        floors = [floor(new) for _ in range(repeat)]
        load = os.getloadavg()[0]
        print("RESULT " + json.dumps({
            "earlier": count, "publish_s": statistics.median(times),
            "floor_s": statistics.median(floors), "fill_s": filled, "load": load,
        }), flush=True)
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--earlier", default="0,10,100,1000")
    parser.add_argument("--trials", type=int, default=20_000)
    parser.add_argument("--earlier-trials-per-cell", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--database-url", default=DEFAULT_URL)
    args = parser.parse_args()
    counts = sorted({int(c) for c in args.earlier.split(",")})
    reset_database(args.database_url)
    env = dict(
        os.environ, DATABASE_URL=args.database_url, DJANGO_SETTINGS_MODULE="boxbench.settings"
    )
    print(
        f"new run: {args.trials} trials; earlier runs: {args.earlier_trials_per_cell} trials per "
        f"provider and unit; median of {args.repeat}; load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    print(f"{'earlier runs':>12} {'publication':>12} {'floor':>8} {'x floor':>8} {'x none':>7}")
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD,
            ",".join(map(str, counts)),
            str(args.trials),
            str(args.earlier_trials_per_cell),
            str(args.repeat),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    baseline = None
    for line in child.stdout:
        if not line.startswith("RESULT "):
            continue
        r = json.loads(line[7:])
        baseline = baseline or r["publish_s"]
        print(
            f"{r['earlier']:>12} {r['publish_s']:>11.2f}s {r['floor_s']:>7.2f}s "
            f"{r['publish_s'] / r['floor_s']:>7.2f}x {r['publish_s'] / baseline:>6.2f}x"
            f"   (filled in {r['fill_s']:.0f} s, load {r['load']:.1f})",
            flush=True,
        )
    if child.wait() != 0:
        sys.exit(child.returncode)


if __name__ == "__main__":
    main()
