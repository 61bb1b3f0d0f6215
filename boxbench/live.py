"""What a run's page shows of a run in progress: per provider and benchmark counts, the run's
badge, and an estimate of the time left. The page polls it as JSON (static/boxbench/run.js).

The estimate is the mean wall time per finished trial (time since the run started divided by
the trials finished, which folds in how many trials run in parallel and how providers take
turns on a shared host) times the trials still queued or running.
"""

from __future__ import annotations

from datetime import datetime

from boxbench.models import Outcome, Run, RunStatus
from runner import runs

ACTIVE = (RunStatus.PLANNED, RunStatus.RUNNING, RunStatus.CANCELLING)
CANCELLABLE = (RunStatus.PLANNED, RunStatus.RUNNING)
POLL_SECONDS = 5


def time_left(elapsed_s: float, finished: int, remaining: int) -> float | None:
    """Seconds left at the observed pace, or None before the first trial has finished."""
    if remaining == 0:
        return 0.0
    if finished == 0 or elapsed_s <= 0:
        return None
    return elapsed_s / finished * remaining


def duration_text(seconds: float | None) -> str:
    """ "about 3 min", "about 1 h 05 min", "under a minute"; "" when unknown."""
    if seconds is None:
        return ""
    minutes = round(seconds / 60)
    if minutes < 1:
        return "under a minute"
    if minutes < 60:
        return f"about {minutes} min"
    return f"about {minutes // 60} h {minutes % 60:02d} min"


FAILED_OUTCOMES = (Outcome.PROVIDER_FAILURE, Outcome.BENCHMARK_ERROR)


def failed_trials(cells: list[dict]) -> int:
    """Trials that ended in a failure, from the run's progress cells (runner.runs.progress)."""
    return sum(
        n
        for c in cells
        for outcome, n in c.get("outcomes", {}).items()
        if outcome in FAILED_OUTCOMES
    )


def badge(run: Run, failed: int) -> dict:
    """The run's status badge: its text and the CSS class that colours it. Red only for a run
    that failed; a completed run with failed trials is amber, without any it is green."""
    status = RunStatus(run.status)
    if status == RunStatus.COMPLETED:
        css = "badge-warn" if failed else "badge-ok"
        text = status.label + (
            f", {failed} failed trial{'s' if failed != 1 else ''}" if failed else ""
        )
    elif status == RunStatus.FAILED:
        css, text = "badge-bad", status.label
    elif status in (RunStatus.CANCELLED, RunStatus.CANCELLING):
        css, text = "badge-muted", status.label
    else:
        css, text = "badge-live", status.label
    return {"text": text, "css": css}


def snapshot(run: Run, cells: list[dict], now: datetime) -> dict:
    """The run's live progress (cells: runner.runs.progress), as the page renders it and
    progress.json returns it."""
    measured = [c for c in cells if "refusal" not in c]
    successes = sum(c["done"] for c in measured)
    failures = sum(c["failures"] for c in measured)
    remaining = sum(c["queued"] + c["running"] for c in measured)
    active = run.status in ACTIVE
    elapsed = (now - run.started_at).total_seconds() if run.started_at else 0.0
    left = time_left(elapsed, successes + failures, remaining) if active else None
    for cell in measured:
        cell["finished"] = cell["done"] + cell["failures"]
    return {
        "status": run.status,
        "badge": badge(run, failed_trials(cells)),
        "active": active,
        "poll_seconds": POLL_SECONDS,
        "finished": successes + failures,
        "successes": successes,
        "failures": failures,
        "remaining": remaining,
        "seconds_left": left,
        "time_left": duration_text(left) if active else "",
        "cells": cells,
        "notes": runs.chain_notes(run),
    }
