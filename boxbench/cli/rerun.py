"""`bench rerun RUN --held-back`: re-run each pair the run's audit held back, once, through the
queue (boxbench/reruns.py), one after another; publish each re-run whose pair passes its audit."""

import contextlib
import time

from django.core.management.base import CommandError

from boxbench import reruns
from boxbench.cli.common import get_run
from boxbench.models import Run, RunStatus

help = (
    "Re-run the pairs a run's audit held back, once each within a printed budget, and publish "
    "each re-run whose pair passes (needs `manage.py qcluster`, as `bench run` does)."
)

# The audit task follows a re-run's end; past this, this command audits it itself.
AUDIT_WAIT_S = 300.0
END_STATES = (RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.FAILED)


def add_arguments(parser):
    parser.add_argument("run", help="Run id (UUID) or a unique run name.")
    parser.add_argument(
        "--held-back",
        action="store_true",
        required=True,
        help="Re-run the pairs held back by failing checks nobody resolved (the only mode).",
    )
    parser.add_argument(
        "--max-pairs", type=int, help="At most this many pairs (default: BOXBENCH_RERUN_MAX_PAIRS)."
    )


def handle(options, out):
    rerun_held_back(get_run(options["run"]), out, options.get("max_pairs"))


def rerun_held_back(run: Run, out, max_pairs: int | None = None) -> list[str]:
    """Plan, start and follow the re-runs of `run`'s held-back pairs; what became of each."""
    if max_pairs is not None and max_pairs < 0:
        raise CommandError("--max-pairs must be 0 or more")
    try:
        plan = reruns.budget(run, max_pairs)
        out.write(plan.describe())
        if not plan.chosen:
            return []
        planned = reruns.plan_reruns(run, plan)
    except reruns.RerunRefused as exc:
        raise CommandError(str(exc)) from None
    reruns.start_next(run)
    outcomes = []
    for rerun in planned:
        out.write(f"Re-running {rerun.name} as run {rerun.id}")
        _wait_until_started(rerun)
        _wait_until_ended(rerun)
        outcome = reruns.finish(_audited(rerun))
        out.write(f"  {outcome}")
        outcomes.append(outcome)
    return outcomes


def _wait_until_started(rerun: Run, timeout_s: float = 3600.0) -> None:
    """The previous re-run's finish starts this one; a planned run waits for it."""
    deadline = time.monotonic() + timeout_s
    while True:
        rerun.refresh_from_db()
        if rerun.status != "planned":
            return
        if time.monotonic() > deadline:
            raise CommandError(f"re-run {rerun.id} was not started within {timeout_s:.0f} s")
        reruns.start_next(Run.objects.get(pk=reruns.rerun_of(rerun).run))
        time.sleep(0.5)


def _wait_until_ended(rerun: Run) -> None:
    # No deadline: a run's chains end by their own limits (lifetimes, top-up rounds, refill
    # time), and `./boxbench.sh stop` ends this command.
    while rerun.status not in END_STATES:
        time.sleep(1.0)
        rerun.refresh_from_db()


def _audited(rerun: Run) -> Run:
    from boxbench import publishing

    deadline = time.monotonic() + AUDIT_WAIT_S
    while rerun.status in END_STATES and rerun.audit_report is None:
        if rerun.status != "completed":
            break  # failed or cancelled: nothing to audit
        if time.monotonic() > deadline:
            with contextlib.suppress(publishing.PublishRefused):  # the audit task's meanwhile
                publishing.run_audit(rerun)
            rerun.refresh_from_db()
            break
        time.sleep(0.5)
        rerun.refresh_from_db()
    return rerun
