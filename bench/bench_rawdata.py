"""Import and export speed of the raw-data format, each beside the database's own speed.

    .venv/bin/python bench/bench_rawdata.py [--trials 100000 1000000] [--database-url URL]
                                            [--sqlite]

For each size it writes a synthetic run (bench/synthetic.py) to a file, then in fresh processes
imports it with `bench import` and exports it with `bench export`, printing trials per second and
each process's peak resident memory. Beside each figure, measured in the same run on the same
rows, is its reference and the ratio:

- import against a bare COPY FROM of the same trial and measurement-name rows (COPY text dumped
  from the imported run; a trial's measurements are columns of its row) into the same tables of
  a fresh database, in one transaction, with the foreign-key triggers skipped as the importer
  skips them;
- export (to /dev/null) against a bare COPY TO of the same rows (both tables), to /dev/null.

With --sqlite it also imports and exports on SQLite (a file under a temporary directory) and
prints SQLite's figures as a multiple of PostgreSQL's. The load average before and after is
printed: the machine is shared.
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
start = time.perf_counter()
if sys.argv[1] == "import":
    call_command("bench", "import", sys.argv[2])
else:
    import os
    from boxbench.models import Run
    # The full form: every trial, the rows the bare COPY TO reads too, and to /dev/null as it.
    sys.stdout = open(os.devnull, "w")
    call_command("bench", "export", str(Run.objects.get().id), "--full")
    sys.stdout = sys.__stdout__
elapsed = time.perf_counter() - start
peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"RESULT {elapsed:.3f} {peak_mib:.1f}")
"""

SMALL_TABLES = ("boxbench_run", "boxbench_provider", "boxbench_benchmark", "boxbench_unit")
TRIAL_ROWS = "SELECT * FROM boxbench_trial"
NAME_ROWS = "SELECT * FROM boxbench_measurementname"


def reset_database(url: str):
    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    migrate(url)


def migrate(url: str):
    env = dict(os.environ, DATABASE_URL=url)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)


def child(action: str, path: str, url: str) -> tuple[float, float]:
    env = dict(os.environ, DATABASE_URL=url, DJANGO_SETTINGS_MODULE="boxbench.settings")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, action, path],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        sys.exit(f"{action} failed:\n{done.stderr[-3000:]}")
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT"))
    _, seconds, peak = line.split()
    return float(seconds), float(peak)


def copy_out(conn, sql: str, target) -> None:
    with conn.cursor().copy(f"COPY ({sql}) TO STDOUT") as copy:
        for block in copy:
            target.write(block)


def bare_copy_to(url: str) -> float:
    """Seconds to COPY the run's trial and measurement-name rows out, to /dev/null."""
    with psycopg.connect(url) as conn, open(os.devnull, "wb") as sink:
        start = time.perf_counter()
        copy_out(conn, TRIAL_ROWS, sink)
        copy_out(conn, NAME_ROWS, sink)
        return time.perf_counter() - start


def dump_rows(url: str, folder: Path) -> None:
    with psycopg.connect(url) as conn:
        for table in SMALL_TABLES:
            with open(folder / f"{table}.copy", "wb") as handle:
                copy_out(conn, f"SELECT * FROM {table}", handle)
        with open(folder / "trials.copy", "wb") as handle:
            copy_out(conn, TRIAL_ROWS, handle)
        with open(folder / "names.copy", "wb") as handle:
            copy_out(conn, NAME_ROWS, handle)


def copy_in(conn, table: str, path: Path) -> None:
    with conn.cursor().copy(f"COPY {table} FROM STDIN") as copy, open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            copy.write(block)


def bare_copy_from(url: str, folder: Path) -> float:
    """Seconds to COPY the same rows into a fresh database, as one committed transaction."""
    reset_database(url)
    with psycopg.connect(url) as conn:
        for table in SMALL_TABLES:
            copy_in(conn, table, folder / f"{table}.copy")
        conn.commit()
        start = time.perf_counter()
        conn.execute("SET LOCAL session_replication_role = replica")
        copy_in(conn, "boxbench_trial", folder / "trials.copy")
        copy_in(conn, "boxbench_measurementname", folder / "names.copy")
        conn.commit()
        return time.perf_counter() - start


def load_average() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def write_run(path: Path, size: int) -> int:
    from bench.synthetic import synthetic_run

    trials = -2  # the header and the trailer
    with open(path, "w") as handle:
        for line in synthetic_run(trials=size, seed=11, failure_rate=0.01):
            handle.write(line)
            trials += 1
    return trials


def row(name: str, trials: int, seconds: float, reference: float | None, peak: float | None):
    rate = trials / seconds
    text = f"  {name:<16} {rate:>10,.0f} trials/s  ({seconds:6.2f} s"
    text += f", peak {peak:.0f} MiB)" if peak is not None else ")"
    if reference is not None:
        text += f"   reference {trials / reference:>10,.0f} trials/s ({reference:.2f} s)"
        text += f"   ratio {seconds / reference:.2f}x the reference's time"
    print(text, flush=True)


def measure_postgres(url: str, source: Path, trials: int, tmp: Path) -> tuple[float, float]:
    reset_database(url)
    t_import, m_import = child("import", str(source), url)
    t_export, m_export = child("export", str(tmp / "export.jsonl"), url)
    t_copy_to = bare_copy_to(url)
    dump_rows(url, tmp)
    t_copy_from = bare_copy_from(url, tmp)
    row("import", trials, t_import, t_copy_from, m_import)
    row("export", trials, t_export, t_copy_to, m_export)
    return t_import, t_export


def measure_sqlite(source: Path, trials: int, tmp: Path, pg: tuple[float, float]):
    url = f"sqlite:///{tmp / 'bench.sqlite3'}"
    migrate(url)
    t_import, m_import = child("import", str(source), url)
    t_export, m_export = child("export", str(tmp / "export-sqlite.jsonl"), url)
    row("sqlite import", trials, t_import, None, m_import)
    row("sqlite export", trials, t_export, None, m_export)
    ratios = f"import {t_import / pg[0]:.2f}x, export {t_export / pg[1]:.2f}x"
    print(f"  sqlite time / postgres time: {ratios}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--sqlite", action="store_true", help="Also measure SQLite.")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    print(f"cores {os.cpu_count()}, load average {load_average()}")
    for size in args.trials:
        with tempfile.TemporaryDirectory() as folder:
            tmp = Path(folder)
            source = tmp / f"run-{size}.jsonl"
            trials = write_run(source, size)
            print(f"{trials:,} trials ({source.stat().st_size / 2**20:.0f} MiB)")
            pg = measure_postgres(args.database_url, source, trials, tmp)
            if args.sqlite:
                measure_sqlite(source, trials, tmp, pg)
    print(f"load average {load_average()}")


if __name__ == "__main__":
    start = time.time()
    main()
    print(f"total {time.time() - start:.0f} s")
