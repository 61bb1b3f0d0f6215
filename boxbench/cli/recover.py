"""`bench recover`: end trials whose worker was lost, and destroy their sandboxes."""

from datetime import timedelta

from django.core.management.base import CommandError

from runner.recovery import recover_orphans

help = (
    "End trials left running by a lost worker (cut short, outcome unknown) and destroy their "
    "sandboxes. Default: trials whose heartbeat is older than BOXBENCH_ORPHAN_AFTER_SECONDS "
    "(without a heartbeat: older than their benchmark's step limits plus a margin)."
)


def add_arguments(parser):
    parser.add_argument(
        "--max-age",
        type=float,
        default=None,
        metavar="MINUTES",
        help="Treat every trial running longer than this as orphaned, whatever its heartbeat "
        "(default: the heartbeat rule). Use only when you know no worker is still running it.",
    )
    parser.add_argument("--dry-run", action="store_true", help="List, change nothing.")


def handle(options, out):
    minutes = options.get("max_age")
    if minutes is not None and minutes < 0:
        raise CommandError(f"--max-age must be 0 or more minutes, got {minutes:g}")
    max_age = None if minutes is None else timedelta(minutes=minutes)
    report = recover_orphans(max_age, dry_run=options.get("dry_run", False))
    verb = "would recover" if options.get("dry_run") else "recovered"
    for orphan in report.orphans:
        if options.get("dry_run") or orphan.recovered:
            started = orphan.started_at.isoformat() if orphan.started_at else "unknown"
            out.write(
                f"{verb} trial {orphan.trial_id} of run {orphan.run_id} on {orphan.provider} "
                f"(batch {orphan.batch}, started {started}, limit {orphan.limit})"
            )
    for name in report.destroyed:
        out.write(f"destroyed {name}")
    for batch in report.deferred:
        out.write(f"deferred {batch}: a live trial still uses this batch")
    for run_id in report.runs_finished:
        out.write(f"run {run_id} is now cancelled")
    for error in report.errors:
        out.write(f"FAILED {error}")
    if options.get("dry_run"):
        out.write(f"found {len(report.orphans)} orphaned trial(s)")
    else:
        out.write(report.summary())
    if report.errors:
        raise CommandError(f"{len(report.errors)} sandbox cleanup error(s); see above")
