"""Dashboard latency under load: wrk against gunicorn over PostgreSQL holding ~1,000,000 trials.

    .venv/bin/python bench/bench_load.py [--trials 1000000] [--database-url URL] [--reuse]

Fills a fresh database with a synthetic run (bench/synthetic.py, spread over many DeepSWE units so
each cell holds a realistic ~1,300 trials) through `bench import`, materializes the dashboard,
starts gunicorn (2 workers x 4 threads on this 2-core machine) and runs wrk with 20 connections
for each page, printing p50 and p99 beside a static file served by the same server (whitenoise).

The run is audited (stats.audit: exact Theil-Sen up to 3000 trials per pair, a seeded sampled
estimate above, see docs/methodology.md) and its audit time printed; then it is marked published
directly (the synthetic run's pairs are not the point here) and materialized, with that time
printed too.
"""

import argparse
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import synthetic  # noqa: E402
from bench.bench_rawdata import reset_database  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/boxbench_load"
PORT = 8765
DEEPSWE_UNITS = 250

PUBLISH = r"""
import time, django
django.setup()
from django.utils import timezone
from boxbench import leaderboard, publishing
from boxbench.models import Run
run = Run.objects.get()
start = time.perf_counter()
report = publishing.run_audit(run)
audit_s = time.perf_counter() - start
Run.objects.filter(id=run.id).update(published=True, published_at=timezone.now())
start = time.perf_counter()
rows = leaderboard.materialize()
print(f"audited {len(report['pairs'])} pairs in {audit_s:.1f} s; "
      f"materialized {rows} aggregates in {time.perf_counter() - start:.1f} s")
print(run.id)
"""


def wide_benchmarks():
    """synthetic.BENCHMARKS with DeepSWE spread over many units."""
    return [(*b[:8], DEEPSWE_UNITS, b[9]) if b[0] == "deepswe" else b for b in synthetic.BENCHMARKS]


def fill(url: str, trials: int) -> str:
    reset_database(url)
    env = dict(os.environ, DATABASE_URL=url, DJANGO_SETTINGS_MODULE="boxbench.settings")
    synthetic.BENCHMARKS[:] = wide_benchmarks()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "load.jsonl"
        with open(path, "w", encoding="utf-8") as handle:
            handle.writelines(synthetic.synthetic_run(trials=trials, name="load-test"))
        start = time.perf_counter()
        manage = [sys.executable, "manage.py"]
        subprocess.run([*manage, "bench", "import", str(path)], cwd=ROOT, env=env, check=True)
        print(f"imported in {time.perf_counter() - start:.1f} s", flush=True)
    # Fresh tables have no planner statistics until autovacuum gets to them.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")
    done = subprocess.run(
        [sys.executable, "-c", PUBLISH], cwd=ROOT, env=env, check=True, capture_output=True,
        text=True,
    )  # fmt: skip
    print(done.stdout.splitlines()[0], flush=True)
    return done.stdout.splitlines()[-1]


def latency(url: str, seconds: int, connections: int) -> tuple[str, str, str]:
    out = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", url],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    p50 = re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1)
    p99 = re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1)
    rate = re.search(r"Requests/sec:\s+(\S+)", out).group(1)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise SystemExit(f"{url}: {errors.group(1)} error responses under load")
    return p50, p99, rate


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1_000_000)
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=20)
    parser.add_argument("--reuse", action="store_true", help="Keep the database already filled.")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (Debian package wrk)")
    env = dict(os.environ, DATABASE_URL=args.database_url, DEBUG="0")
    # gunicorn with DEBUG off refuses the development key.
    env.setdefault("SECRET_KEY", secrets.token_urlsafe(48))
    if not args.reuse:
        fill(args.database_url, args.trials)
    run_id = subprocess.run(
        [sys.executable, "-c", "import django; django.setup();"
         "from boxbench.models import Run; print(Run.objects.get().id)"],
        cwd=ROOT, env=dict(env, DJANGO_SETTINGS_MODULE="boxbench.settings"), check=True,
        capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    static_root = tempfile.mkdtemp(prefix="boxbench-static-")
    env["STATIC_ROOT"] = static_root
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env,
        check=True,
    )  # fmt: skip
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "boxbench.wsgi", "-b", f"127.0.0.1:{PORT}",
         "-w", "2", "-k", "gthread", "--threads", "4", "--log-level", "warning"],
        cwd=ROOT, env=env,
    )  # fmt: skip
    base = f"http://127.0.0.1:{PORT}"
    try:
        for _ in range(100):
            try:
                httpx.get(base + "/", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        unit = f"deepswe-unit-{DEEPSWE_UNITS // 2}"
        pages = {
            "static file (site.css)": "/static/boxbench/site.css",
            "overview /": "/",
            "benchmark /benchmarks/deepswe/": "/benchmarks/deepswe/",
            "benchmark /benchmarks/create/": "/benchmarks/create/",
            "unit page": f"/benchmarks/deepswe/units/{unit}/",
            "provider /providers/alpha/": "/providers/alpha/",
            "run /runs/<id>/": f"/runs/{run_id}/",
            "benchmark CSV": "/benchmarks/deepswe.csv",
            "unit CSV": f"/benchmarks/deepswe/units/{unit}.csv",
            "methodology": "/methodology/",
        }
        for path in pages.values():  # warm every worker's caches once
            assert httpx.get(base + path, timeout=30).status_code == 200, path
        print(
            f"\n{args.connections} connections, {args.seconds} s per page, 2 cores shared with wrk"
        )
        print(f"{'page':<36} {'p50':>9} {'p99':>9} {'req/s':>9}")
        for name, path in pages.items():
            p50, p99, rate = latency(base + path, args.seconds, args.connections)
            print(f"{name:<36} {p50:>9} {p99:>9} {rate:>9}", flush=True)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        shutil.rmtree(static_root, ignore_errors=True)


if __name__ == "__main__":
    main()
