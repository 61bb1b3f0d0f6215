"""Import and export speed and memory of the raw-data format on PostgreSQL.

    .venv/bin/python bench/bench_rawdata.py [--trials 1000000 100000] [--database-url URL]

For each size it writes a synthetic run (bench/synthetic.py) to a file, then in fresh processes
imports it with `bench import` and exports it with `bench export`, printing trials per second and
each process's peak resident memory. Memory flat in the number of trials means the peak barely
moves between the sizes.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/boxbench_bench"

CHILD = r"""
import resource, sys, time, django
django.setup()
from django.core.management import call_command
from django.db import connection
start = time.perf_counter()
if sys.argv[1] == "import":
    call_command("bench", "import", sys.argv[2])
else:
    from boxbench.models import Run
    call_command("bench", "export", str(Run.objects.get().id), "-o", sys.argv[2])
elapsed = time.perf_counter() - start
peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"RESULT {elapsed:.3f} {peak_mib:.1f}")
"""


def reset_database(url: str):
    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    env = dict(os.environ, DATABASE_URL=url)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)


def child(action: str, path: str, url: str) -> tuple[float, float]:
    env = dict(os.environ, DATABASE_URL=url, DJANGO_SETTINGS_MODULE="boxbench.settings")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, action, path],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT"))
    _, seconds, peak = line.split()
    return float(seconds), float(peak)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--database-url", default=DEFAULT_URL)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from bench.synthetic import synthetic_run

    columns = ("trials", "import/s", "import peak", "export/s", "export peak")
    print(" ".join(f"{name:>12}" for name in columns))
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.trials:
            source = Path(tmp) / f"run-{size}.jsonl"
            with open(source, "w") as handle:
                lines = -1
                for line in synthetic_run(trials=size, seed=11, failure_rate=0.01):
                    handle.write(line)
                    lines += 1
            reset_database(args.database_url)
            t_import, m_import = child("import", str(source), args.database_url)
            target = Path(tmp) / f"export-{size}.jsonl"
            t_export, m_export = child("export", str(target), args.database_url)
            print(
                f"{lines:>12} {lines / t_import:>12.0f} {m_import:>8.0f} MiB"
                f" {lines / t_export:>12.0f} {m_export:>8.0f} MiB"
                f"   ({t_import:.1f} s import, {t_export:.1f} s export)"
            )


if __name__ == "__main__":
    start = time.time()
    main()
    print(f"total {time.time() - start:.0f} s")
