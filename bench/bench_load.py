"""Dashboard and /metrics latency under load: wrk against gunicorn over PostgreSQL, 1M trials.

    .venv/bin/python bench/bench_load.py [--trials 1000000] [--in-progress 200000]
        [--earlier-runs 99] [--earlier-trials-per-cell 3]
        [--database-url URL] [--reuse] [--redis redis://127.0.0.1:6380/0] [--seconds 10]
        [--only "staff,/metrics"] [--workers 2] [--threads 4] [--port 8765]

Fills a fresh database with --earlier-runs published runs (a week apart, each a point of every
history series; 3 trials per provider and unit by default) and then a synthetic run
(bench/synthetic.py, spread over many DeepSWE units so each cell holds a realistic ~1,300 trials)
through `bench import`, so the dashboard holds 100 published runs; materializes it, adds
an unpublished run with --in-progress trials (queued, running and done) through the ORM, starts
gunicorn (by default 2 workers x 4 threads, for a 2-core machine) and runs wrk with 20 connections
for each page, as a visitor and as a staff member with every page permission (a session cookie),
and for /metrics (bearer token). Each page's p50 and p99 are printed beside a static file served by
the same server (whitenoise) in the same run, with the ratio of the p99s and the load average. The
page cache is the database table unless --redis points at a Redis (BOXBENCH_CACHE_URL: give it one
of its own, the bench clears it). --only measures just the pages
whose names contain one of its comma-separated words (every page is still rendered once).

It also downloads the published run's raw.jsonl and raw.csv twice each, printing the first
request's time beside the second's, and measures progress.json.

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
from bench import synthetic
from bench.bench_rawdata import reset_database

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/boxbench_load"
PORT = 8765
DEEPSWE_UNITS = 250

PUBLISH = r"""
import time, django
django.setup()
from django.utils import timezone
from boxbench import publishing
from boxbench.leaderboard.materialize import materialize
from boxbench.models import Run
run = Run.objects.get(name="load-test")
start = time.perf_counter()
report = publishing.run_audit(run)
audit_s = time.perf_counter() - start
Run.objects.filter(id=run.id).update(published=True, published_at=timezone.now())
start = time.perf_counter()
rows = materialize()
print(f"audited {len(report['pairs'])} pairs in {audit_s:.1f} s; "
      f"materialized {rows} aggregates in {time.perf_counter() - start:.1f} s")
print(run.id)
"""


EARLIER = r"""
import sys, tempfile, time, django
django.setup()
from datetime import timedelta
from pathlib import Path
from django.utils import timezone
from bench import synthetic
from boxbench.models import Run
from boxbench.rawdata import import_jsonl
from bench.bench_load import wide_benchmarks
synthetic.BENCHMARKS[:] = wide_benchmarks()
count, per_cell, trials = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
cells = sum(b[8] for b in synthetic.BENCHMARKS) * len(synthetic.PROVIDERS)
declared = max(1, trials // cells)  # the load-test run's trials per unit
now = timezone.now()
start = time.perf_counter()
with tempfile.TemporaryDirectory() as tmp:
    for i in range(count):
        path = Path(tmp) / f"earlier-{i}.jsonl"
        lines = synthetic.synthetic_run(
            trials=cells * per_cell, seed=1000 + i, name=f"earlier-{i}", declared_per_unit=declared
        )
        path.write_text("".join(lines), encoding="utf-8")
        run = import_jsonl(str(path)).run
        # A week apart, all before the load-test run, which is published last.
        published = now - timedelta(days=7 * (count - i))
        Run.objects.filter(id=run.id).update(published=True, published_at=published)
        path.unlink()
print(f"imported and published {count} earlier runs in {time.perf_counter() - start:.1f} s")
"""


IN_PROGRESS = r"""
import sys, django
django.setup()
from boxbench.models import Run, RunStatus, Trial
wanted = int(sys.argv[1])
source = Run.objects.get(name="load-test")
run = Run.objects.create(name="in-progress", status=RunStatus.RUNNING)
# Six in ten queued, one running, three done: a large run part way through.
STATES = ["queued"] * 6 + ["running"] + ["done"] * 3
fields = ["benchmark_id", "unit_id", "provider_id", "round", "seq", "batch"]
rows = Trial.objects.filter(run=source).order_by("seq").values_list(*fields)[:wanted]
batch = []
for i, values in enumerate(rows.iterator(chunk_size=10_000)):
    state = STATES[i % len(STATES)]
    trial = Trial(run=run, state=state, outcome="success" if state == "done" else "",
                  **dict(zip(fields, values)))
    batch.append(trial)
    if len(batch) == 5000:
        Trial.objects.bulk_create(batch)
        batch = []
Trial.objects.bulk_create(batch)
print(Trial.objects.filter(run=run).count())
"""

STAFF_SESSION = r"""
import django
django.setup()
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from importlib import import_module
from django.conf import settings
from django.contrib.auth.models import Permission, User
from boxbench.views.audience import PAGE_PERMISSIONS
SessionStore = import_module(settings.SESSION_ENGINE).SessionStore
user, _ = User.objects.get_or_create(username="bench-staff", defaults={"is_staff": True})
codenames = [p.split(".")[1] for p in PAGE_PERMISSIONS]
user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
session = SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.save()
print(session.session_key)
"""


def django_script(script: str, env: dict, *args: str) -> str:
    env = dict(env, DJANGO_SETTINGS_MODULE="boxbench.settings")
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip().splitlines()[-1]


def wide_benchmarks():
    """synthetic.BENCHMARKS with DeepSWE spread over many units."""
    return [(*b[:8], DEEPSWE_UNITS, b[9]) if b[0] == "deepswe" else b for b in synthetic.BENCHMARKS]


def fill(url: str, trials: int, earlier: int, earlier_per_cell: int) -> str:
    reset_database(url)
    env = dict(os.environ, DATABASE_URL=url, DJANGO_SETTINGS_MODULE="boxbench.settings")
    if earlier:
        done = subprocess.run(
            [sys.executable, "-c", EARLIER, str(earlier), str(earlier_per_cell), str(trials)],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        print(done.stdout.strip().splitlines()[-1], flush=True)
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
        [sys.executable, "-c", PUBLISH],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    print(done.stdout.splitlines()[0], flush=True)
    return done.stdout.splitlines()[-1]


def latency(url: str, seconds: int, connections: int, headers: list[str]) -> dict:
    flags = [part for header in headers for part in ("-H", header)]
    threads = min(2, connections)
    out = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", *flags, url],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise SystemExit(f"{url}: {errors.group(1)} error responses under load")
    return {
        "p50": _ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1)),
        "p99": _ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1)),
        "rate": float(re.search(r"Requests/sec:\s+(\S+)", out).group(1)),
    }


def raw_downloads(base: str, run_id: str) -> None:
    """A visitor's raw.jsonl and raw.csv of the published run, twice each: the first request
    exports the run, the second is served again (from the file kept per publication)."""
    print("\nraw downloads of the published run (public form), the first request beside again:")
    for name in ("raw.jsonl", "raw.csv"):
        seconds, size = [], 0
        for _ in range(2):
            start, size = time.perf_counter(), 0
            with httpx.stream("GET", f"{base}/runs/{run_id}/{name}", timeout=900) as response:
                assert response.status_code == 200, (name, response.status_code)
                for chunk in response.iter_bytes():
                    size += len(chunk)
            seconds.append(time.perf_counter() - start)
        print(
            f"{name:<10} {size / 2**20:>7.1f} MiB  first {seconds[0]:>7.2f} s  again "
            f"{seconds[1]:>7.2f} s  ratio {seconds[1] / seconds[0]:>6.3f}  {_load()}",
            flush=True,
        )


def _ms(text: str) -> float:
    """wrk's '812.00us', '12.34ms' or '1.02s' in milliseconds."""
    for suffix, factor in (("us", 0.001), ("ms", 1.0), ("s", 1000.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    raise ValueError(f"wrk printed an unknown duration {text!r}")


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1_000_000)
    parser.add_argument("--in-progress", type=int, default=200_000)
    parser.add_argument(
        "--earlier-runs",
        type=int,
        default=99,
        help="Published runs before the load-test run, each a point of every history series.",
    )
    parser.add_argument(
        "--earlier-trials-per-cell",
        type=int,
        default=3,
        help="Trials per provider and unit in each earlier run.",
    )
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes.")
    parser.add_argument("--threads", type=int, default=4, help="Threads per worker.")
    parser.add_argument("--reuse", action="store_true", help="Keep the database already filled.")
    parser.add_argument(
        "--port",
        type=int,
        default=PORT,
        help="gunicorn's port (another measurement may hold the default).",
    )
    parser.add_argument("--redis", default="", help="BOXBENCH_CACHE_URL: the page cache's Redis.")
    parser.add_argument(
        "--only",
        default="",
        help="Measure only pages whose names contain one of these comma-separated words.",
    )
    args = parser.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (Debian package wrk)")
    token = secrets.token_urlsafe(24)
    env = dict(
        os.environ,
        DATABASE_URL=args.database_url,
        DEBUG="0",
        BOXBENCH_METRICS_TOKEN=token,
        BOXBENCH_CACHE_URL=args.redis,
    )
    # gunicorn with DEBUG off refuses the development key.
    env.setdefault("SECRET_KEY", secrets.token_urlsafe(48))
    if not args.reuse:
        fill(args.database_url, args.trials, args.earlier_runs, args.earlier_trials_per_cell)
    count_in_progress = (
        "import django; django.setup(); from boxbench.models import Trial;"
        "print(Trial.objects.filter(run__name='in-progress').count())"
    )
    if args.in_progress and not int(django_script(count_in_progress, env)):
        start = time.perf_counter()
        added = django_script(IN_PROGRESS, env, str(args.in_progress))
        print(f"added {added} trials in progress in {time.perf_counter() - start:.1f} s")
        with psycopg.connect(args.database_url, autocommit=True) as conn:
            conn.execute("ANALYZE")
    run_id = django_script(
        "import django; django.setup();"
        "from boxbench.models import Run; print(Run.objects.get(name='load-test').id)",
        env,
    )
    staff = [f"Cookie: sessionid={django_script(STAFF_SESSION, env)}"]
    static_root = tempfile.mkdtemp(prefix="boxbench-static-")
    env["STATIC_ROOT"] = static_root
    exports = tempfile.mkdtemp(prefix="boxbench-exports-")  # no file kept from an earlier run
    env["BOXBENCH_RAW_EXPORT_DIR"] = exports
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    # Served under its hashed name only (WHITENOISE_KEEP_ONLY_HASHED_FILES): the plain one is a 404.
    static = django_script(
        "import django; django.setup();"
        "from django.contrib.staticfiles.storage import staticfiles_storage as s;"
        "print(s.url('boxbench/site.css'))",
        env,
    )
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup();from django.core.cache import cache; cache.clear()",
        ],
        cwd=ROOT,
        env=dict(env, DJANGO_SETTINGS_MODULE="boxbench.settings"),
        check=True,
    )
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "boxbench.wsgi",
            "-b",
            f"127.0.0.1:{args.port}",
            "-w",
            str(args.workers),
            "-k",
            "gthread",
            "--threads",
            str(args.threads),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    base = f"http://127.0.0.1:{args.port}"
    try:
        for _ in range(100):
            try:
                httpx.get(base + "/", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        unit = f"deepswe-unit-{DEEPSWE_UNITS // 2}"
        deepswe_page_3 = "?a=alpha&b=bravo&benchmark=deepswe&page=3"
        visitor: list[str] = []
        metrics = [f"Authorization: Bearer {token}"]
        pages = [
            ("overview /", "/", visitor),
            ("overview /, staff", "/", staff),
            ("benchmark /benchmarks/deepswe/", "/benchmarks/deepswe/", visitor),
            ("benchmark deepswe, staff", "/benchmarks/deepswe/", staff),
            ("benchmark /benchmarks/create/", "/benchmarks/create/", visitor),
            ("unit page", f"/benchmarks/deepswe/units/{unit}/", visitor),
            ("unit page, staff", f"/benchmarks/deepswe/units/{unit}/", staff),
            ("provider /providers/alpha/", "/providers/alpha/", visitor),
            ("history: benchmark deepswe, unit", f"/benchmarks/deepswe/?unit={unit}", visitor),
            ("compare alpha vs bravo", "/compare/?a=alpha&b=bravo", visitor),
            ("compare deepswe page 3", f"/compare/{deepswe_page_3}", visitor),
            ("compare CSV", "/compare.csv?a=alpha&b=bravo", visitor),
            ("API overview", "/api/v1/overview", visitor),
            ("API unit", f"/api/v1/benchmarks/deepswe/units/{unit}", visitor),
            ("API history deepswe", f"/api/v1/benchmarks/deepswe/history?unit={unit}", visitor),
            ("API compare", "/api/v1/compare?a=alpha&b=bravo", visitor),
            ("API compare deepswe page 3", f"/api/v1/compare{deepswe_page_3}", visitor),
            ("API run audit", f"/api/v1/runs/{run_id}/audit", visitor),
            ("badge alpha/create", "/providers/alpha/create.svg", visitor),
            ("run /runs/<id>/", f"/runs/{run_id}/", visitor),
            ("run /runs/<id>/, staff", f"/runs/{run_id}/", staff),
            ("progress.json", f"/runs/{run_id}/progress.json", visitor),
            ("benchmark CSV", "/benchmarks/deepswe.csv", visitor),
            ("unit CSV", f"/benchmarks/deepswe/units/{unit}.csv", visitor),
            ("methodology", "/methodology/", visitor),
            ("/metrics", "/metrics", metrics),
        ]
        # Prometheus scrapes one request at a time: /metrics alone, beside a static file alone.
        scrape = ("/metrics, 1 connection", "/metrics", metrics)
        first, size = {}, {}
        for name, path, headers in pages:  # the first render, which fills the shared cache
            cookies = dict(h.split(": ", 1) for h in headers)
            start = time.perf_counter()
            response = httpx.get(base + path, headers=cookies, timeout=300)
            first[name] = (time.perf_counter() - start) * 1000
            assert response.status_code == 200, (path, response.status_code)
            size[name] = len(response.content) / 1024
        raw_downloads(base, run_id)
        print(
            f"\n{args.connections} connections, {args.seconds} s per page, gunicorn "
            f"{args.workers} workers x {args.threads} threads, {os.cpu_count()} cores shared with "
            f"wrk; reference: {static} from the same server, measured before each page"
        )
        print(
            f"{'page':<34} {'KiB':>6} {'first':>8} {'p50':>8} {'p99':>8} {'req/s':>8} "
            f"{'static p99':>10} {'ratio':>6}  load"
        )
        first[scrape[0]], size[scrape[0]] = first["/metrics"], size["/metrics"]
        words = [word for word in args.only.split(",") if word]
        measured = [
            page for page in [*pages, scrape] if not words or any(w in page[0] for w in words)
        ]
        for name, path, headers in measured:
            connections = 1 if name == scrape[0] else args.connections
            reference = latency(base + static, args.seconds, connections, [])
            figures = latency(base + path, args.seconds, connections, headers)
            print(
                f"{name:<34} {size[name]:>6.0f} {first[name]:>6.0f}ms {figures['p50']:>6.1f}ms "
                f"{figures['p99']:>6.1f}ms {figures['rate']:>8.0f} {reference['p99']:>8.1f}ms "
                f"{figures['p99'] / reference['p99']:>6.2f}  {_load()}",
                flush=True,
            )
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        shutil.rmtree(static_root, ignore_errors=True)
        shutil.rmtree(exports, ignore_errors=True)


if __name__ == "__main__":
    main()
