"""`bench run`: plan a run, start it, and optionally follow it with a progress bar, then publish.

The README's command: `bench run --plan default --provider local[,docker] --wait --publish`, with
`manage.py qcluster` running (or `--inline` to run the chains in this process).
"""

import sys
import threading
import time

from django.core.management.base import CommandError
from tqdm import tqdm

from boxbench import holdbacks, publishing
from boxbench.cli.terminal import printable
from boxbench.models import Run, RunStatus
from runner import named_plans, runs, steps, store
from runner.benchmarks import terminal_bench
from runner.plan import PlanError, plan_run
from runner.providers import demo
from runner.tasks import imported
from runner.tasks.format import TaskError

help = "Plan and start a benchmark run (eligibility refusals are shown before it starts)."

DEFAULT_PROVIDER = "local"
END_STATES = (RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.FAILED)


def add_arguments(parser):
    parser.add_argument(
        "--plan",
        choices=sorted(named_plans.PLANS),
        help="A named plan (runner/named_plans.py): its benchmarks, units, trials and concurrency.",
    )
    parser.add_argument(
        "--benchmark", action="append", help="Benchmark slug (repeatable or comma-separated)."
    )
    parser.add_argument(
        "--unit",
        action="append",
        help="Units to run (repeatable or comma-separated; default: every unit): of the one "
        "--benchmark given, or BENCHMARK:UNIT with several.",
    )
    parser.add_argument(
        "--provider",
        action="append",
        help="Provider slug (repeatable or comma-separated; default: local, needing no account).",
    )
    parser.add_argument(
        "--tasks",
        metavar="DIR",
        help="Terminal-Bench (Harbor format) tasks to run: a task folder or a folder of them, "
        "checked and imported first (`bench tasks check DIR` checks without importing); "
        "their units replace the shipped ones unless --unit names others.",
    )
    parser.add_argument("--trials", type=int, help="Trials per unit (default: each benchmark's N).")
    parser.add_argument(
        "--concurrency",
        type=int,
        help="Trials in parallel per provider, for every benchmark (default: each benchmark's "
        "declared parallel trials), capped by BOXBENCH_JOB_HOST_CAP.",
    )
    parser.add_argument(
        "--allow-busy-account",
        action="store_true",
        help="Start each chain even if the account holds other live sandboxes (recorded).",
    )
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
        "--publish",
        action="store_true",
        help="After the run ends (implies --wait): audit it and publish it to the dashboard.",
    )
    parser.add_argument(
        "--rerun-held-back",
        action="store_true",
        help="With --publish: then re-run each pair the audit held back, once, within the "
        "budget (as `bench rerun RUN --held-back`).",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="Run against each provider's loopback fake (runner/providers/fakes/), no account "
        "needed; implies --inline. The run is marked as a demo and is never published.",
    )
    parser.add_argument(
        "--inline",
        action="store_true",
        help="Run the chains in this process instead of the queue (implies --wait).",
    )


def handle(options, out):
    if options.get("demo"):
        if options.get("job_host"):
            raise CommandError("--demo runs in this process: it takes no --job-host")
        slugs = _names(options.get("provider")) or [DEFAULT_PROVIDER]
        for slug in slugs:
            try:
                demo.fake_class(slug)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
        try:
            with demo.demo_session(slugs):
                out.write(f"Demo: {', '.join(slugs)} against loopback fakes (never published)")
                _handle(dict(options, inline=True), out, demo_slugs=slugs)
        except demo.DemoError as exc:
            raise CommandError(str(exc)) from None
        return
    _handle(options, out)


def _handle(options, out, demo_slugs=None):
    job_hosts = {}
    for item in options.get("job_host") or []:
        provider, sep, host = item.partition("=")
        if not sep or not provider or not host:
            raise CommandError(f"--job-host takes PROVIDER=HOST, got {item!r}")
        job_hosts[provider] = host
    name = options.get("name") or time.strftime("run %Y-%m-%d %H:%M:%S")
    benchmarks = _names(options.get("benchmark"))
    plan = named_plans.get_plan(options["plan"]) if options.get("plan") else None
    if plan and benchmarks:
        raise CommandError("--plan names its own benchmarks: give either --plan or --benchmark")
    if plan and options.get("unit"):
        raise CommandError("--plan names its own units: give either --plan or --unit")
    if options.get("tasks"):
        if plan:
            raise CommandError("--plan names its own units: give either --plan or --tasks")
        benchmarks = task_benchmarks(benchmarks)
    units = unit_choice(_names(options.get("unit")), benchmarks)
    if options.get("tasks") and not units:
        units = {terminal_bench.SLUG: import_task_units(options["tasks"], out)}
    try:
        run = plan_run(
            name,
            benchmarks=list(plan.benchmarks) if plan else benchmarks,
            units=plan.units if plan else units,
            providers=_names(options.get("provider")) or [DEFAULT_PROVIDER],
            trials=options.get("trials") or (plan.trials if plan else None),
            concurrency=options.get("concurrency") or (plan.concurrency if plan else None),
            seed=options.get("seed"),
            job_hosts=job_hosts,
            budget_usd=options.get("budget_usd"),
            refill_minutes=options["refill_minutes"],
            allow_busy_account=options.get("allow_busy_account", False),
        )
    except PlanError as exc:
        raise CommandError(str(exc)) from None
    if demo_slugs:
        entry = demo.manifest_entry(demo_slugs)
        store.update_manifest(run.pk, lambda m: setattr(m, "demo", entry))
        run.refresh_from_db(fields=["manifest"])
    manifest = run.typed_manifest
    out.write(f"Run {run.id} ({run.name}), seed {manifest.seed}")
    for refusal in manifest.refusals:
        unit = f" / {refusal.unit}" if refusal.unit else ""
        out.write(
            f"  refused {refusal.provider} / {refusal.benchmark}{unit}: {refusal.code} "
            f"{refusal.label} ({refusal.missing}) {refusal.message}"
        )
    if options.get("inline"):
        run.transition(RunStatus.RUNNING, note="started inline by bench run")
        # One provider's chain after another, in one thread: SQLite takes one writer at a time
        # (parallel chains there fail with "table is locked"), and chains in one process share
        # its job host, so running them side by side would let one slow the other.
        slugs = list(run.manifest["providers"])
        worker = threading.Thread(
            target=lambda: [_chain(run.pk, slug) for slug in slugs], daemon=True
        )
        worker.start()
        follow(run, out)
        worker.join()
    else:
        steps.start_run(run)
        if options.get("wait") or options.get("publish"):
            follow(run, out)
    run.refresh_from_db()
    out.write(summary(run))
    if run.status == RunStatus.FAILED:
        raise CommandError(f"run {run.id} failed: see its transitions in the admin")
    if options.get("publish"):
        publish(run, out)
        if options.get("rerun_held_back"):
            from boxbench.cli.rerun import rerun_held_back

            rerun_held_back(run, out)


def task_benchmarks(benchmarks: list[str]) -> list[str]:
    """--tasks runs the Terminal-Bench-style workload, named or not (`terminal-bench` is the
    short name users of Terminal-Bench type)."""
    named = [terminal_bench.SLUG if b == "terminal-bench" else b for b in benchmarks]
    if any(b != terminal_bench.SLUG for b in named):
        raise CommandError(f"--tasks runs {terminal_bench.SLUG} alone, not {', '.join(named)}")
    return [terminal_bench.SLUG]


def import_task_units(directory: str, out) -> list[str]:
    """Check and import the tasks of `directory`; nothing is imported when any is refused."""
    try:
        tasks = imported.import_tasks(directory)
    except TaskError as exc:
        raise CommandError(f"--tasks {directory}: {exc}") from None
    out.write(f"Imported {len(tasks)} task(s) from {directory}: {', '.join(t.slug for t in tasks)}")
    return [task.slug for task in tasks]


def _names(values: list[str] | None) -> list[str]:
    """Slugs from repeated flags, each possibly comma-separated: `--provider local,docker`."""
    return [name.strip() for value in values or [] for name in value.split(",") if name.strip()]


def unit_choice(units: list[str], benchmarks: list[str]) -> dict[str, list[str]] | None:
    """`--unit` values as the plan's {benchmark: [units]}: bare units belong to the one
    benchmark named; with several, each says its own (`BENCHMARK:UNIT`). Whether a unit exists
    is the planner's question, so its refusal is the same from the CLI and the admin."""
    if not units:
        return None
    chosen: dict[str, list[str]] = {}
    for item in units:
        benchmark, sep, unit = item.rpartition(":")
        if not sep:
            if len(benchmarks) != 1:
                raise CommandError(
                    f"--unit {item!r}: name one --benchmark, or write BENCHMARK:UNIT "
                    f"(benchmarks given: {', '.join(benchmarks) or 'none'})"
                )
            benchmark = benchmarks[0]
        elif benchmark not in benchmarks:
            raise CommandError(f"--unit {item!r}: {benchmark} is not among the --benchmark given")
        if not unit:
            raise CommandError(f"--unit {item!r}: no unit after {benchmark}:")
        chosen.setdefault(benchmark, []).append(unit)
    return chosen


def publish(run: Run, out) -> None:
    """Audit the ended run (unless audited) and publish it pair by pair; a failing pair stays
    out of publication and is printed with its check."""
    if run.status != RunStatus.COMPLETED:
        raise CommandError(f"run {run.id} is {run.status}: only a completed run is published")
    try:
        publishing.publish(run)
    except publishing.PublishRefused as exc:
        raise CommandError(f"run {run.id} was not published: {exc}") from None
    out.write(f"Published run {run.name} ({run.id}); the dashboard shows it.")
    write_held_back(run, out)


def write_held_back(run: Run, out) -> None:
    held = holdbacks.held_back([run])[run.id]
    for pair in held:
        for check in pair["checks"]:
            out.write(f"  held back {pair['provider']} / {pair['benchmark']}: {check['why']}")
    if held:
        out.write(
            f"{len(held)} pair(s) held back until resolved: see `manage.py bench audit {run.id}`."
        )


def _chain(run_id, slug):
    from django.db import connections

    try:
        steps.execute_chain(run_id, slug, inline=True)
    except Exception:  # noqa: BLE001 - execute_chain logged it and failed the run
        pass
    finally:
        connections.close_all()


def follow(run: Run, out, interval: float = 0.5, log_every: float = 60.0) -> None:
    """Progress of successful trials against the target, until the run ends: a bar on a
    terminal; elsewhere (a log file, a pipe) a plain line every `log_every` seconds and at the
    end, since a bar redrawn twice a second fills a log with a line per redraw."""
    stream = getattr(out, "_out", None) or sys.stderr
    live = stream.isatty()
    name = printable(run.name)
    bar = tqdm(total=1, unit="trial", desc=name, file=stream, disable=not live)
    logged = None
    try:
        while True:
            run.refresh_from_db()
            cells = [c for c in runs.progress(run) if "target" in c]
            total = max(1, sum(c["target"] for c in cells))
            done = sum(min(c["done"], c["target"]) for c in cells)
            failures = sum(c["failures"] for c in cells)
            ended = run.status in END_STATES
            if live:
                bar.total, bar.n = total, done
                bar.set_postfix(failures=failures, status=run.status, refresh=False)
                bar.refresh()
            elif ended or logged is None or time.monotonic() - logged >= log_every:
                stream.write(f"{name}: {done}/{total} trials, {failures} failures, {run.status}\n")
                stream.flush()
                logged = time.monotonic()
            if ended:
                return
            time.sleep(interval)
    finally:
        bar.close()


def summary(run: Run) -> str:
    lines = [f"Run {run.id}: {run.status}"]
    lines += [f"  stopped {note}" for note in runs.chain_notes(run)]
    for cell in runs.progress(run):
        if "refusal" in cell:
            lines.append(f"  {cell['provider']:<12} {cell['benchmark']:<20} {cell['refusal']}")
        else:
            lines.append(
                f"  {cell['provider']:<12} {cell['benchmark']:<20} "
                f"{cell['done']}/{cell['target']} successes, {cell['failures']} failures"
            )
            lines += [f"    not run: {why}" for why in cell.get("refused_units", [])]
    if run.audit_report is not None:
        verdicts = [p.get("verdict") for p in run.audit_report.get("pairs", [])]
        lines.append(f"  audit: {len(verdicts)} pairs, verdicts {sorted(set(verdicts))}")
    return "\n".join(lines)
