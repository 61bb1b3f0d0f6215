"""django-q2 entry points: plain functions taking IDs, so tests run them inline (sync).

One task per chain step (runner/steps.py): the start, or one batch. Each step is routed to the
queue of its job host's cluster (Q_CLUSTER name = BOXBENCH_JOB_HOST), so with the Redis broker
one qcluster per job host runs each provider's steps on its own machine; every trial records the
host that ran it.
"""

from __future__ import annotations

from boxbench.models import Run, RunStatus
from runner import steps
from runner.steps import cluster_for  # noqa: F401 - where callers have always found it


def start_run(run: Run) -> None:
    """Move a planned run to running and enqueue the first step of each chain (or lane)."""
    run.transition(RunStatus.RUNNING, note="started", actor=run.created_by)
    steps.start(run)


def chain_step(run_id: str, provider_slug: str, step: int) -> None:
    steps.chain_step(run_id, provider_slug, step)
