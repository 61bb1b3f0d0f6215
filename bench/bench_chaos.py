"""Cost of the reliability endpoints and of orphan recovery on a large PostgreSQL database, and
chaos case C1 end to end with the default settings.

    .venv/bin/python bench/bench_chaos.py [--trials 200000] [--orphans 200] [--database-url URL]
    .venv/bin/python bench/bench_chaos.py --kill [--database-url URL]
    .venv/bin/python bench/bench_chaos.py --restart-backend [--database-url URL]

`--kill` (C1, docs/reliability.md): a fresh database, a run of cpu-single on `local` (4 trials)
executed by a real `manage.py qcluster` with the default heartbeat and orphan settings; the
cluster is killed with SIGKILL while sysbench runs, and a new one is started at once. Prints the
time from the kill until the orphan is ended and its sandbox gone, and until the run finishes,
with the counts: trials lost (not finished), trials run twice (more than one lifecycle record),
sandboxes leaked (left in the local root).

`--restart-backend` (C5): OpenSandbox's real server on a Podman service of its own (as `python -m
runner.providers.opensandbox serve` starts them), three bystander sandboxes with the server's
shortest lifetime (60 s), and a run of latency-per-call (4 trials) through the adapter; while the
first trial's sandbox runs, the server is killed with SIGKILL and started again at once. Prints
the server's downtime, the time until it lists every sandbox again, the run's outcome, and the
counts: trials lost, run twice, sandboxes leaked (the run's still listed after it ended, and
bystanders still there 30 s after their expiry, which the restarted server must still enforce).

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
from bench.bench_rawdata import ROOT, reset_database

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


def kill_case(url: str) -> None:
    import signal
    import subprocess

    from boxbench.models import Evidence, EvidenceKind, Run, RunStatus, Trial, TrialState
    from runner import steps
    from runner.declarations import get_declaration
    from runner.plan import plan_run
    from runner.providers.local import LocalProvider

    root = ROOT / "var" / "bench-chaos-sandboxes"
    root.mkdir(parents=True, exist_ok=True)
    local = LocalProvider(get_declaration("local"), {"root": str(root)})
    env = {**os.environ, "DATABASE_URL": url, "BOXBENCH_LOCAL_SANDBOX_ROOT": str(root)}

    def cluster(name: str):
        log = open(ROOT / "var" / f"bench-chaos-{name}.log", "wb")  # noqa: SIM115 - kept open
        return subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait(condition, timeout_s: float, what: str) -> float:
        started = time.monotonic()
        while not condition():
            if time.monotonic() - started > timeout_s:
                raise SystemExit(f"no {what} within {timeout_s:g} s")
            time.sleep(0.2)
        return time.monotonic()

    def sysbench_running() -> bool:
        from tests.reliability.test_recovery import tool_running

        return tool_running(local, "sysbench")

    run = plan_run("chaos C1", benchmarks=["cpu-single"], providers=["local"], trials=4, seed=1)
    steps.start_run(run)
    first = cluster("killed")
    wait(sysbench_running, 180, "sysbench")
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    killed = time.monotonic()
    (orphan,) = Trial.objects.filter(run=run, state=TrialState.RUNNING)
    second = cluster("restarted")
    try:
        ended = wait(
            lambda: (
                Trial.objects.get(pk=orphan.pk).state == TrialState.DONE
                and not local.list_sandboxes()
            ),
            600,
            "recovery",
        )
        done = wait(lambda: Run.objects.get(pk=run.pk).status != RunStatus.RUNNING, 900, "run end")
    finally:
        os.killpg(second.pid, signal.SIGKILL)
        second.wait()
    trials = Trial.objects.filter(run=run)
    lost = trials.filter(state__in=[TrialState.QUEUED, TrialState.RUNNING]).count()
    twice = sum(
        1
        for t in trials
        if Evidence.objects.filter(trial=t, kind=EvidenceKind.LIFECYCLE).count() > 1
    )
    leaked = len(local.list_sandboxes())
    print(
        f"C1 (kill -9 qcluster mid-trial, default settings): orphan ended and sandbox gone "
        f"{ended - killed:.1f} s after the kill; run {Run.objects.get(pk=run.pk).status} "
        f"{done - killed:.1f} s after; trials lost {lost}, run twice {twice}, "
        f"sandboxes leaked {leaked}"
    )


def restart_backend_case() -> None:
    import secrets
    import signal
    import threading
    import uuid
    from datetime import UTC, datetime

    from django.conf import settings

    from boxbench.models import Evidence, EvidenceKind, Run, RunStatus, Trial, TrialState
    from runner import adapters, steps
    from runner.labels import run_prefix
    from runner.plan import plan_run
    from runner.providers import get_provider
    from runner.providers.base import SandboxSpec
    from runner.providers.opensandbox import local
    from runner.readiness import readiness_check

    directory = Path(tempfile.mkdtemp(prefix="bench-chaos-opensandbox-"))
    stack = local.start_stack(
        directory, local.free_port(), secrets.token_urlsafe(16), settings.VAR_DIR / "images"
    )
    values = {"url": stack.url, "api_key": stack.api_key, "docker_host": stack.docker_host}
    provider = get_provider("opensandbox", settings=values)
    try:
        label = f"bench-chaos-{uuid.uuid4().hex[:8]}"
        bystanders = [provider.create(SandboxSpec(1, 512, label, 60)) for _ in range(3)]
        for sandbox in bystanders:
            readiness_check(provider, sandbox)
        expiry = max(
            datetime.fromisoformat(provider.get(s.id)["expiresAt"].replace("Z", "+00:00"))
            for s in bystanders
        )
        in_procedure = threading.Event()

        class Watched:
            """The adapter; `in_procedure` is set at the first trial's 10th command."""

            def __init__(self):
                self.commands = 0

            def __getattr__(self, name):
                return getattr(provider, name)

            def exec(self, *args, **kwargs):
                self.commands += 1
                if self.commands == 10:
                    in_procedure.set()
                return provider.exec(*args, **kwargs)

        adapters.provider_factory = lambda slug: Watched()
        run = plan_run(
            "chaos C5",
            benchmarks=["latency-per-call"],
            providers=["opensandbox"],
            trials=4,
            seed=1,
            concurrency=1,
            allow_busy_account=True,
        )
        run.transition(RunStatus.RUNNING)
        chain_thread = threading.Thread(target=steps.execute_chain, args=(run.pk, "opensandbox"))
        chain_thread.start()
        prefix = run_prefix(run.pk)
        if not in_procedure.wait(300):
            raise SystemExit("the first trial's procedure never started")
        killed = time.monotonic()
        os.killpg(stack.server.popen.pid, signal.SIGKILL)
        stack.server.popen.wait()
        port = int(stack.url.rsplit(":", 1)[1])
        stack.server = local.start_server(
            directory, directory / "sandbox.toml", stack.docker_host, port
        )
        answering = time.monotonic()
        listed = {s.id for s in provider.list_sandboxes(label)}
        relisted = time.monotonic()
        chain_thread.join()
        run.refresh_from_db()
        trials = Trial.objects.filter(run=run)
        lost = trials.filter(state__in=[TrialState.QUEUED, TrialState.RUNNING]).count()
        twice = sum(
            1
            for t in trials
            if Evidence.objects.filter(trial=t, kind=EvidenceKind.LIFECYCLE).count() > 1
        )
        outcomes = ", ".join(
            f"{t.outcome}" + (f" ({t.cause})" if t.cause else "") for t in trials.order_by("seq")
        )
        left = [s for s in provider.list_sandboxes() if s.label.startswith(prefix)]
        wait_s = (expiry - datetime.now(UTC)).total_seconds() + 30
        time.sleep(max(0.0, wait_s))
        outlived = [s for s in bystanders if not provider.is_gone(s.id)]
        print(
            f"C5 (SIGKILL of opensandbox-server mid-trial, started again at once): server "
            f"answering {answering - killed:.1f} s after the kill, every sandbox listed again "
            f"{relisted - killed:.1f} s after ({len(listed)} of {len(bystanders)} bystanders); "
            f"run {run.status}: {outcomes}; bystanders past their expiry still there: "
            f"{len(outlived)}; trials lost {lost}, run twice {twice}, "
            f"sandboxes leaked {len(left) + len(outlived)}"
        )
        for sandbox in [*bystanders, *left]:
            try:
                provider.destroy(sandbox)
            except Exception as exc:  # noqa: BLE001 - reported; the engine is stopped below
                print(f"cannot destroy {sandbox.id} ({sandbox.label}): {exc}")
        if Run.objects.get(pk=run.pk).status == RunStatus.RUNNING:
            raise SystemExit("the run did not finish")
    finally:
        provider.close()
        stack.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200_000)
    parser.add_argument("--orphans", type=int, default=200)
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--kill", action="store_true", help="run chaos case C1 end to end")
    parser.add_argument(
        "--restart-backend", action="store_true", help="run chaos case C5 on a real server"
    )
    args = parser.parse_args()
    reset_database(args.database_url)
    if args.kill or args.restart_backend:
        os.environ["DATABASE_URL"] = args.database_url
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "boxbench.settings")
        import django

        django.setup()
        if args.kill:
            kill_case(args.database_url)
        else:
            restart_backend_case()
        return
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
