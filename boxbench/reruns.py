"""Re-running the pairs a run's audit held back (the methodology: a failing pair is resolved by
excluding outliers, by an explanation, "or the pair is re-run").

Each held-back pair of a run is re-run once, as a run of its own holding just that pair (the
original's units and trials), through the queue, one re-run at a time so that two never share
the job host. When a re-run ends, its audit (boxbench.tasks.audit_run) calls `finish`: a re-run
whose pair passes is published, and the original run's failing checks of the pair are resolved
as re-run, naming it, so the board takes that pair from the re-run and every other pair from the
original (leaderboard.sources). A pair that fails again stays held back; the original run's page
links each re-run, whose page holds its audit. The number of pairs re-run per run is bounded
(RERUN_MAX_PAIRS), and a pair is never re-run twice.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError

from boxbench import holdbacks, publishing
from boxbench.models import AuditResolution, InvalidTransition, ResolutionKind, Run, RunStatus
from runner import store
from runner.manifest import RerunOf

RESOLUTION_NOTE = "The pair was re-run once and its re-run passed the audit."


class RerunRefused(Exception):
    """The run's held-back pairs cannot be re-run; the message says why."""


@dataclass(frozen=True)
class Budget:
    max_pairs: int
    held_back: list[tuple[str, str]]  # pairs not yet re-run
    chosen: list[tuple[str, str]]  # within the budget
    trials: int  # trials the chosen re-runs plan
    spent: int = 0  # pairs of the run re-run before

    def describe(self) -> str:
        left = len(self.held_back) - len(self.chosen)
        before = f", {self.spent} of them spent before" if self.spent else ""
        text = (
            f"Re-run budget: at most {self.max_pairs} pair(s) per run, each once "
            f"(BOXBENCH_RERUN_MAX_PAIRS){before}; {len(self.held_back)} held back, re-running "
            f"{len(self.chosen)} ({self.trials} trials)"
        )
        return text + (f"; {left} left held back" if left else "")


def rerun_of(run: Run) -> RerunOf | None:
    return run.typed_manifest.rerun_of


def reruns_of(run: Run) -> list[Run]:
    """The re-runs of `run`'s held-back pairs, oldest first."""
    return list(Run.objects.filter(manifest__rerun_of__run=str(run.id)).order_by("created_at"))


def rerun_pairs(run: Run) -> set[tuple[str, str]]:
    """(provider, benchmark) of each pair of `run` re-run (or planned to be) so far."""
    done = set()
    for rerun in reruns_of(run):
        of = rerun_of(rerun)
        if of is not None:
            done.add((of.provider, of.benchmark))
    return done


def pairs_to_rerun(run: Run) -> list[tuple[str, str]]:
    """(provider, benchmark) of each pair held back by an unresolved failing check, not yet
    re-run."""
    failing = {(p, b) for p, b, _ in holdbacks.unresolved_failures(run)}
    return sorted(failing - rerun_pairs(run))


def _planned_trials(run: Run, benchmark: str) -> tuple[int, list[str]]:
    planned = run.typed_manifest.benchmarks.get(benchmark)
    if planned is None:
        raise RerunRefused(f"run {run.id} has no plan of benchmark {benchmark!r} to re-run")
    return planned.trials_per_unit, list(planned.units)


def budget(run: Run, max_pairs: int | None = None, only=None) -> Budget:
    """The pairs to re-run now: those held back and not yet re-run (of `only`, when given: the
    run page re-runs one pair at a time), within the run's budget less the pairs re-run before,
    so that re-running pair by pair spends the same budget as re-running them all at once."""
    limit = settings.RERUN_MAX_PAIRS if max_pairs is None else max_pairs
    held = pairs_to_rerun(run)
    spent = len(rerun_pairs(run))
    wanted = [pair for pair in held if only is None or pair in only]
    chosen = wanted[: max(limit - spent, 0)]
    trials = 0
    for _, benchmark in chosen:
        per_unit, units = _planned_trials(run, benchmark)
        trials += per_unit * max(len(units), 1)
    return Budget(limit, held, chosen, trials, spent)


def plan_reruns(run: Run, plan: Budget, actor=None) -> list[Run]:
    """Plan one run per chosen pair (started later, one at a time, by `start_next`)."""
    from runner.plan import PlanError, plan_run

    if run.status != RunStatus.COMPLETED or run.audit_report is None:
        raise RerunRefused(f"run {run.id} is {run.status} and audited only once completed")
    planned = []
    for provider, benchmark in plan.chosen:
        per_unit, units = _planned_trials(run, benchmark)
        try:
            rerun = plan_run(
                f"re-run of {run.name}: {provider} / {benchmark}"[:200],
                benchmarks=[benchmark],
                providers=[provider],
                trials=per_unit,
                units={benchmark: units} if units else None,
                actor=actor,
            )
        except PlanError as exc:
            raise RerunRefused(f"{provider} / {benchmark}: {exc}") from None
        link = RerunOf(run=str(run.id), provider=provider, benchmark=benchmark)
        store.update_manifest(rerun.pk, lambda m, link=link: setattr(m, "rerun_of", link))
        rerun.refresh_from_db()
        planned.append(rerun)
    return planned


def start_next(run: Run) -> Run | None:
    """Start the oldest planned re-run of `run` unless one is going; the one started, or None."""
    from runner import steps

    found = reruns_of(run)
    if any(r.status in (RunStatus.RUNNING, RunStatus.CANCELLING) for r in found):
        return None
    for rerun in found:
        if rerun.status == RunStatus.PLANNED:
            try:
                steps.start_run(rerun)
            except InvalidTransition:
                return None  # started by another process meanwhile
            return rerun
    return None


def pair_failures(rerun: Run) -> list[str]:
    """The checks of the re-run pair that failed the re-run's audit."""
    of = rerun_of(rerun)
    report = rerun.audit_report or {}
    if of is None:
        return []
    pair = (of.provider, of.benchmark)
    return [check for p, b, check in holdbacks.failing_checks(report) if (p, b) == pair]


def finish(rerun: Run) -> str:
    """After a re-run ended and was audited: publish it if its pair passed and resolve the
    original's failing checks of the pair by it; then start the next re-run. Safe to call twice
    (the audit task and `bench rerun` both call it). Returns what became of the pair."""
    of = rerun_of(rerun)
    if of is None:
        return ""
    original = Run.objects.get(pk=of.run)
    pair = f"{of.provider} / {of.benchmark}"
    if rerun.status != RunStatus.COMPLETED or rerun.audit_report is None:
        outcome = f"{pair}: the re-run {rerun.id} is {rerun.status}; the pair stays held back"
    elif failed := pair_failures(rerun):
        outcome = (
            f"{pair}: the re-run {rerun.id} failed the audit too ({', '.join(failed)}); the pair "
            "stays held back, both audits linked from the run page"
        )
    else:
        # Resolved first, so that the publication's pages show the resolution too.
        _resolve(original, rerun, of)
        refusal = ""
        if not rerun.published:
            try:
                publishing.publish(rerun)
            except publishing.PublishRefused as exc:
                refusal = str(exc)
        # The other caller may have published it meanwhile: that is the same outcome, said once.
        rerun.refresh_from_db(fields=["published"])
        if rerun.published:
            outcome = f"{pair}: the re-run {rerun.id} passed the audit and is published"
        else:
            outcome = (
                f"{pair}: the re-run {rerun.id} passed the audit but is not published: {refusal}"
            )
        start_next(original)
        return outcome
    if original.published:
        # No publication follows: rebuild the pages so the original's links this re-run.
        publishing.rematerialize()
    start_next(original)
    return outcome


def _resolve(original: Run, rerun: Run, of: RerunOf) -> None:
    resolved = set(
        AuditResolution.objects.filter(run=original).values_list(
            "provider__slug", "benchmark__slug", "check_name"
        )
    )
    failures = [
        f
        for f in holdbacks.failing_checks(original.audit_report or {})
        if f[:2] == (of.provider, of.benchmark) and f not in resolved
    ]
    if not failures:
        return
    with contextlib.suppress(IntegrityError):  # resolved by the other caller meanwhile
        publishing.resolve_failing(
            original, failures, ResolutionKind.RERUN, RESOLUTION_NOTE, rerun=rerun
        )
