"""`bench run`: plan a run, start it, and optionally follow it with a progress bar."""

import threading
import time

from django.core.management.base import CommandError
from tqdm import tqdm

from boxbench.models import Run, RunStatus
from runner import schedule, tasks

help = "Plan and start a benchmark run (eligibility refusals are shown before it starts)."

DEFAULT_PROVIDER = "local"
END_STATES = (RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.FAILED)


def add_arguments(parser):
    parser.add_argument("--benchmark", action="append", help="Benchmark slug (repeatable).")
    parser.add_argument(
        "--provider",
        action="append",
        help="Provider slug (repeatable; default: local, the one that needs no account).",
    )
    parser.add_argument("--trials", type=int, help="Trials per unit (default: each benchmark's N).")
    parser.add_argument("--concurrency", type=int, help="Trials in parallel per provider.")
    parser.add_argument("--name", help="Run name (default: a timestamp).")
    parser.add_argument("--seed", type=int, help="Shuffle seed (default: random; kept).")
    parser.add_argument("--budget-usd", type=float, help="Stop top-ups once this is spent.")
    parser.add_argument("--refill-minutes", type=float, default=10.0, help="Top-up time limit.")
    parser.add_argument(
        "--job-host",
        action="append",
        metavar="PROVIDER=HOST",
        help="Run a provider's chain on another job host's qcluster (Redis broker).",
    )
    parser.add_argument("--wait", action="store_true", help="Follow the run until it ends.")
    parser.add_argument(
        "--inline",
        action="store_true",
        help="Run the chains in this process instead of the queue (implies --wait).",
    )


def handle(options, out):
    job_hosts = {}
    for item in options.get("job_host") or []:
        provider, sep, host = item.partition("=")
        if not sep or not provider or not host:
            raise CommandError(f"--job-host takes PROVIDER=HOST, got {item!r}")
        job_hosts[provider] = host
    name = options.get("name") or time.strftime("run %Y-%m-%d %H:%M:%S")
    try:
        run = schedule.plan_run(
            name,
            benchmarks=options.get("benchmark"),
            providers=options.get("provider") or [DEFAULT_PROVIDER],
            trials=options.get("trials"),
            concurrency=options.get("concurrency"),
            seed=options.get("seed"),
            job_hosts=job_hosts,
            budget_usd=options.get("budget_usd"),
            refill_minutes=options["refill_minutes"],
        )
    except schedule.PlanError as exc:
        raise CommandError(str(exc)) from None
    out.write(f"Run {run.id} ({run.name}), seed {run.manifest['seed']}")
    for refusal in run.manifest["refusals"]:
        out.write(
            f"  refused {refusal['provider']} / {refusal['benchmark']}: {refusal['code']} "
            f"({refusal['missing']}) {refusal['message']}"
        )
    if options.get("inline"):
        run.transition(RunStatus.RUNNING, note="started inline by bench run")
        chains = [
            threading.Thread(target=_chain, args=(run.pk, slug), daemon=True)
            for slug in run.manifest["providers"]
        ]
        for chain in chains:
            chain.start()
        follow(run, out)
        for chain in chains:
            chain.join()
    else:
        tasks.start_run(run)
        if options.get("wait"):
            follow(run, out)
    run.refresh_from_db()
    out.write(summary(run))
    if run.status == RunStatus.FAILED:
        raise CommandError(f"run {run.id} failed: see its transitions in the admin")


def _chain(run_id, slug):
    from django.db import connections

    try:
        schedule.execute_chain(run_id, slug)
    except Exception:  # noqa: BLE001 - execute_chain logged it and failed the run
        pass
    finally:
        connections.close_all()


def follow(run: Run, out, interval: float = 0.5) -> None:
    """A progress bar of successful trials against the target, until the run ends."""
    bar = tqdm(
        total=1, unit="trial", desc=run.name, file=out._out if hasattr(out, "_out") else None
    )
    try:
        while True:
            run.refresh_from_db()
            cells = [c for c in schedule.progress(run) if "target" in c]
            bar.total = max(1, sum(c["target"] for c in cells))
            bar.n = sum(min(c["done"], c["target"]) for c in cells)
            bar.set_postfix(failures=sum(c["failures"] for c in cells), status=run.status)
            bar.refresh()
            if run.status in END_STATES:
                return
            time.sleep(interval)
    finally:
        bar.close()


def summary(run: Run) -> str:
    lines = [f"Run {run.id}: {run.status}"]
    for cell in schedule.progress(run):
        if "refusal" in cell:
            lines.append(f"  {cell['provider']:<12} {cell['benchmark']:<20} {cell['refusal']}")
        else:
            lines.append(
                f"  {cell['provider']:<12} {cell['benchmark']:<20} "
                f"{cell['done']}/{cell['target']} successes, {cell['failures']} failures"
            )
    if run.audit_report is not None:
        verdicts = [p.get("verdict") for p in run.audit_report.get("pairs", [])]
        lines.append(f"  audit: {len(verdicts)} pairs, verdicts {sorted(set(verdicts))}")
    return "\n".join(lines)
