"""The runner's own cost per trial, and trials per second with 1, 2 and 4 job hosts.

    .venv/bin/python bench/bench_control_plane.py [--trials 200] [--hosts 1,2,4]
        [--benchmark latency-per-call] [--concurrency 1] [--database-url URL]
        [--redis redis://127.0.0.1:6379/14] [--profile 25]

Every trial runs on the null provider (runner/providers/null.py), whose sandboxes cost nothing,
so what a trial takes is what the control plane spends on it. In a fresh PostgreSQL database:

1. One job host, in this machine's own process: a run of --trials trials through the real chain
   (runner/steps.py execute_chain: claims, heartbeats, the lifecycle, the store's writes, the
   tally's triggers), with every public function of runner/store.py timed (the outermost call
   only) and the tally's trigger functions timed by PostgreSQL (track_functions). Printed: the
   chain's wall time per trial, split into the claim, the heartbeat, the write of the trial with
   its measurements and evidence, the store's other reads and writes, the tally (inside the claim
   and the write), and the rest (the lifecycle's own work in this process).
2. The reference, in the same run: a bare INSERT of the same rows (each trial's row and its
   evidence rows, in the same tables, with psycopg's executemany, one transaction per trial as
   the runner commits each trial) into a copy of the run.
3. Job hosts as qclusters on this machine (one worker each, one Redis broker, the one
   PostgreSQL): for each count in --hosts, that many runs of --trials trials, one per job host,
   started at once once every cluster runs; trials per second is every trial recorded over the
   span from the first trial's start to the last one's end (cluster start-up left out), printed
   beside one host's and beside the bare INSERT's rate.

--synchronous-commit-off runs it all with the bench database's commits not waiting for the
write-ahead log's flush to disk: an experiment that shows what the flushes cost, never a setting
to deploy (a crash would lose the last trials written).

--profile N prints the N functions with the most time of their own (cProfile) over a second
in-process run. The load average is printed at the start and after each part: two cores shared
with anything else show in it.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.bench_rawdata import reset_database

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/bench_cp"
DEFAULT_REDIS = "redis://127.0.0.1:6379/14"  # a database number of its own: the bench flushes it
START_DEADLINE_S = 120
TALLY_FUNCTIONS = "boxbench_trial_tally_%"
SQL_SHOWN, SQL_LISTED = 90, 10  # the slowest statements of the chain: their first characters


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


# The child: Django set up on the bench's database --------------------------------------------


def child(args) -> None:
    import django

    django.setup()
    if args.child == "inline":
        print("RESULT " + json.dumps(inline(args)), flush=True)
    elif args.child == "start":
        print("RESULT " + json.dumps(start_runs(args)), flush=True)


def plan(args, name: str, job_host: str | None = None):
    from runner.plan import plan_run

    return plan_run(
        name,
        benchmarks=[args.benchmark],
        providers=["null"],
        trials=args.trials,
        seed=1,
        concurrency=args.concurrency,
        job_hosts={"null": job_host} if job_host else None,
    )


def inline(args) -> dict:
    """One run through the chain in this process, each store call and the tally timed."""
    import cProfile
    import pstats
    import threading
    from collections import Counter, defaultdict

    from django.db import connection, connections

    from boxbench.models import RunStatus
    from runner import steps, store

    spent: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    lock, depth = threading.Lock(), threading.local()

    def timed(name, function):
        def call(*a, **kw):
            # Only the outermost store call counts: one store function may call another.
            outer = getattr(depth, "n", 0) == 0
            depth.n = getattr(depth, "n", 0) + 1
            started = time.perf_counter()
            try:
                return function(*a, **kw)
            finally:
                depth.n -= 1
                if outer:
                    with lock:
                        spent[name] += time.perf_counter() - started
                        calls[name] += 1

        return call

    statements: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])

    def timed_sql(execute, sql, params, many, context):
        # The chain's own connection (its one worker is this thread): each statement's time.
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            entry = statements[" ".join(sql.split())[:SQL_SHOWN]]
            entry[0] += 1
            entry[1] += time.perf_counter() - started

    wrapper = type(connections["default"])
    commit = wrapper._commit
    commits = [0, 0.0]

    def timed_commit(self):
        # A transaction's COMMIT (a statement in autocommit commits inside its own time).
        started = time.perf_counter()
        try:
            return commit(self)
        finally:
            with lock:
                commits[0] += 1
                commits[1] += time.perf_counter() - started

    run = plan(args, "control plane, in process")
    run.transition(RunStatus.RUNNING)
    wrapper._commit = timed_commit  # type: ignore[method-assign]
    # Wrapped once the run is planned: planning is not a trial's cost.
    for name, function in list(vars(store).items()):
        ours = callable(function) and getattr(function, "__module__", "") == store.__name__
        if ours and not name.startswith("_") and not isinstance(function, type):
            setattr(store, name, timed(name, function))
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_reset()")
    profiler = cProfile.Profile() if args.profile_pass else None
    started = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    # Not inline: the audit the finished run enqueues waits in the queue, out of the timing.
    with connection.execute_wrapper(timed_sql):
        steps.execute_chain(run.pk, "null")
    if profiler is not None:
        profiler.disable()
    wall = time.perf_counter() - started
    connections.close_all()  # a backend's function statistics reach pg_stat when it ends
    time.sleep(1.0)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT funcname, calls, total_time FROM pg_stat_user_functions WHERE funcname LIKE %s",
            [TALLY_FUNCTIONS],
        )
        tally = {name: [n, ms] for name, n, ms in cursor.fetchall()}
    run.refresh_from_db()
    result = {
        "run": str(run.pk),
        "status": run.status,
        "wall_s": wall,
        "spent_s": dict(spent),
        "calls": dict(calls),
        "tally": tally,
        "commits": commits,
        "statements": sorted(statements.items(), key=lambda item: -item[1][1])[:SQL_LISTED],
        "outcomes": dict(Counter(run.trials.values_list("outcome", flat=True))),
    }
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(args.profile)
        result["profile"] = out.getvalue()
    return result


def start_runs(args) -> dict:
    """Plan one run per job host, then start them all through the queue (Redis)."""
    from runner import steps

    runs = [plan(args, f"control plane, host {i}", f"host-{i}") for i in range(args.hosts_now)]
    for run in runs:
        steps.start_run(run)
    return {"runs": [str(run.pk) for run in runs]}


# The bench: this process drives the children, the clusters and the reference ----------------


def django_env(args, **extra) -> dict:
    return {
        **os.environ,
        "DATABASE_URL": args.database_url,
        "DJANGO_SETTINGS_MODULE": "boxbench.settings",
        **extra,
    }


def run_child(args, action: str, env: dict, *extra: str) -> dict:
    command = [sys.executable, __file__, "--child", action, *sys.argv[1:], *extra]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{action} failed:\n{done.stderr[-3000:]}")
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def bare_insert(url: str, run_id: str) -> tuple[float, int, int]:
    """(seconds, trials, evidence rows): the run's trial and evidence rows inserted again into a
    copy of the run, one transaction per trial, as plain parameterised INSERTs."""
    copy = str(uuid.uuid4())
    with psycopg.connect(url) as conn:
        conn.execute(
            "INSERT INTO boxbench_run SELECT (jsonb_populate_record(NULL::boxbench_run, "
            "to_jsonb(r) || jsonb_build_object('id', %s::uuid, 'name', 'bare insert', "
            "'label_prefix', NULL))).* FROM boxbench_run r WHERE id = %s",
            [copy, run_id],
        )
        trials = conn.execute("SELECT * FROM boxbench_trial WHERE run_id = %s", [run_id])
        trial_columns = [c.name for c in trials.description or []]
        trial_rows = [list(row) for row in trials.fetchall()]
        evidence = conn.execute(
            "SELECT e.* FROM boxbench_evidence e JOIN boxbench_trial t ON t.id = e.trial_id "
            "WHERE t.run_id = %s",
            [run_id],
        )
        evidence_columns = [c.name for c in evidence.description or [] if c.name != "id"]
        by_trial: dict = {}
        for row in evidence.fetchall():
            values = dict(zip([c.name for c in evidence.description or []], row, strict=True))
            by_trial.setdefault(values["trial_id"], []).append(
                [values[c] for c in evidence_columns]
            )
        conn.commit()
        insert_trial = _insert("boxbench_trial", trial_columns)
        insert_evidence = _insert("boxbench_evidence", evidence_columns)
        id_at, run_at = trial_columns.index("id"), trial_columns.index("run_id")
        trial_at = evidence_columns.index("trial_id")
        started = time.perf_counter()
        for row in trial_rows:
            old = row[id_at]
            row[id_at], row[run_at] = uuid.uuid4(), copy
            with conn.transaction(), conn.cursor() as cursor:
                cursor.execute(insert_trial, _json(row))
                rows = [r[:trial_at] + [row[id_at]] + r[trial_at + 1 :] for r in by_trial[old]]
                cursor.executemany(insert_evidence, [_json(r) for r in rows])
        seconds = time.perf_counter() - started
    return seconds, len(trial_rows), sum(len(rows) for rows in by_trial.values())


def _insert(table: str, columns: list[str]) -> str:
    names = ", ".join(f'"{c}"' for c in columns)
    return f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(columns))})"


def _json(row: list) -> list:
    return [Jsonb(v) if isinstance(v, dict | list) else v for v in row]


def qcluster(args, host: str, key: str, log_dir: Path) -> subprocess.Popen:
    env = django_env(
        args,
        SECRET_KEY=key,
        BOXBENCH_REDIS_URL=args.redis,
        BOXBENCH_JOB_HOST=host,
        BOXBENCH_VAR_DIR=str(log_dir / host),
        BOXBENCH_Q_WORKERS="1",
    )
    with open(log_dir / f"{host}.log", "ab") as log:
        return subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def wait_until(condition, what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            sys.exit(f"no {what} within {timeout_s:g} s")
        time.sleep(0.2)


def hosts_rate(args, count: int, log_dir: Path) -> dict:
    """`count` qclusters, one run each: trials recorded per second over their common span."""
    import redis

    redis.Redis.from_url(args.redis).flushdb()
    key = secrets.token_urlsafe(48)
    hosts = [f"host-{i}" for i in range(count)]
    clusters = [qcluster(args, host, key, log_dir) for host in hosts]
    try:
        wait_until(
            lambda: all(b"running." in (log_dir / f"{host}.log").read_bytes() for host in hosts),
            "cluster start",
            START_DEADLINE_S,
        )
        env = django_env(args, SECRET_KEY=key, BOXBENCH_REDIS_URL=args.redis)
        runs = run_child(args, "start", env, "--hosts-now", str(count))["runs"]
        with psycopg.connect(args.database_url, autocommit=True) as conn:

            def finished() -> bool:
                row = conn.execute(
                    "SELECT count(*) FROM boxbench_run WHERE id = ANY(%s::uuid[]) "
                    "AND status IN ('completed', 'failed')",
                    [runs],
                ).fetchone()
                return row is not None and row[0] == len(runs)

            wait_until(finished, f"end of the runs on {count} host(s)", 3600)
            per_host = conn.execute(
                "SELECT job_host, count(*), count(*) FILTER (WHERE outcome = 'success'), "
                "extract(epoch FROM max(ended_at) - min(started_at)) FROM boxbench_trial "
                "WHERE run_id = ANY(%s::uuid[]) AND state = 'done' GROUP BY job_host "
                "ORDER BY job_host",
                [runs],
            ).fetchall()
            span = conn.execute(
                "SELECT extract(epoch FROM max(ended_at) - min(started_at)) FROM boxbench_trial "
                "WHERE run_id = ANY(%s::uuid[]) AND state = 'done'",
                [runs],
            ).fetchone()
    finally:
        for cluster in clusters:
            os.killpg(cluster.pid, signal.SIGTERM)
        for cluster in clusters:
            try:
                cluster.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(cluster.pid, signal.SIGKILL)
                cluster.wait()
    trials = sum(row[1] for row in per_host)
    seconds = float(span[0]) if span and span[0] else float("nan")
    return {
        "hosts": count,
        "trials": trials,
        "successes": sum(row[2] for row in per_host),
        "seconds": seconds,
        "rate": trials / seconds,
        "per_host": [(host, n, float(s)) for host, n, _, s in per_host],
        "load": load(),
    }


def report_inline(result: dict, trials: int, bare_ms: float) -> None:
    spent, calls, tally = result["spent_s"], result["calls"], result["tally"]

    def ms(seconds: float) -> float:
        return seconds * 1000 / trials

    wall = ms(result["wall_s"])
    parts = {
        "claim (claim_trial)": ["claim_trial"],
        "heartbeat (beat, beat_chain)": ["beat", "beat_chain"],
        "write (save_result)": ["save_result"],
    }
    named = {n for names in parts.values() for n in names}
    other = sorted((n for n in spent if n not in named), key=lambda n: -spent[n])
    tally_ms = sum(t[1] for t in tally.values()) / trials
    print(f"one job host in process: {trials} trials, outcomes {result['outcomes']}")
    print(f"  {'part':<40} {'ms/trial':>9} {'calls':>7}")
    print(f"  {'the whole chain (wall)':<40} {wall:>9.2f} {'':>7}")
    for label, names in parts.items():
        seconds = sum(spent.get(n, 0.0) for n in names)
        count = sum(calls.get(n, 0) for n in names)
        print(f"  {label:<40} {ms(seconds):>9.2f} {count:>7}")
    rest = sum(spent[n] for n in other)
    print(f"  {'other store calls':<40} {ms(rest):>9.2f} {sum(calls[n] for n in other):>7}")
    for name in other[:6]:
        print(f"    {name:<38} {ms(spent[name]):>9.2f} {calls[name]:>7}")
    print(f"  {'tally triggers (inside claim and write)':<40} {tally_ms:>9.2f}")
    count, seconds = result["commits"]
    print(f"  {'COMMITs of transactions (inside the store)':<40} {ms(seconds):>9.2f} {count:>7}")
    print("  the chain's slowest statements (their time is in the store's above):")
    for sql, (count, seconds) in result["statements"]:
        print(f"    {ms(seconds):>7.2f} ms/trial {count:>6} x  {sql}")
    outside = result["wall_s"] - sum(spent.values())
    print(f"  {'outside the store (lifecycle, chain)':<40} {ms(outside):>9.2f}")
    store_ms = ms(sum(spent.values()))
    print(
        f"  control plane's store time {store_ms:.2f} ms/trial, whole chain {wall:.2f} ms/trial; "
        f"bare INSERT {bare_ms:.2f} ms/trial: x{store_ms / bare_ms:.1f} and x{wall / bare_ms:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--hosts", default="1,2,4")
    parser.add_argument("--benchmark", default="latency-per-call")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--redis", default=DEFAULT_REDIS)
    parser.add_argument("--profile", type=int, default=0)
    parser.add_argument("--synchronous-commit-off", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--hosts-now", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--profile-pass", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    try:
        counts = sorted({int(c) for c in args.hosts.split(",")})
    except ValueError:
        sys.exit(f"--hosts takes whole numbers separated by commas, got {args.hosts!r}")
    if not counts or counts[0] < 1:
        sys.exit(f"--hosts takes counts of 1 or more, got {args.hosts!r}")
    commits = "off (an experiment: commits do not wait for the WAL flush)"
    commits = commits if args.synchronous_commit_off else "on"
    print(
        f"{args.trials} trials of {args.benchmark} per job host; synchronous_commit {commits}; "
        f"{load()}",
        flush=True,
    )
    reset_database(args.database_url)
    name = args.database_url.rsplit("/", 1)[1]
    with psycopg.connect(args.database_url, autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE \"{name}\" SET track_functions = 'pl'")
        if args.synchronous_commit_off:
            conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    env = django_env(args)
    result = run_child(args, "inline", env)
    if result["status"] != "completed":
        sys.exit(f"the in-process run ended {result['status']}: {result['outcomes']}")
    bare_s, trials, evidence = bare_insert(args.database_url, result["run"])
    bare_ms = bare_s * 1000 / trials
    print(
        f"bare INSERT: {trials} trial rows and {evidence} evidence rows, one transaction per "
        f"trial: {bare_ms:.2f} ms/trial ({trials / bare_s:.0f} trials/s); {load()}"
    )
    report_inline(result, trials, bare_ms)
    if args.profile:
        profiled = run_child(args, "inline", env, "--profile-pass")
        print(profiled.get("profile", ""))
    rates: dict[int, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cp-") as tmp:
        for count in counts:
            rates[count] = found = hosts_rate(args, count, Path(tmp))
            one = rates[counts[0]]["rate"] / counts[0]
            hosts = ", ".join(f"{h} {n} in {s:.1f} s" for h, n, s in found["per_host"])
            print(
                f"{count} job host(s): {found['trials']} trials ({found['successes']} successful) "
                f"in {found['seconds']:.1f} s = {found['rate']:.1f} trials/s, "
                f"x{found['rate'] / one:.2f} of one host's, "
                f"{found['rate'] * bare_ms / 1000:.2f} of the bare INSERT's rate "
                f"({hosts}); {found['load']}",
                flush=True,
            )


if __name__ == "__main__":
    main()
