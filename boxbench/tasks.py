"""django-q2 tasks of the web side: plain functions taking IDs, so tests run them inline (sync).

The runner enqueues `boxbench.tasks.audit_run` by name when a run completes, so `runner/` never
imports the audit and its statistics.
"""

from __future__ import annotations

import logging

from boxbench import reruns
from boxbench.models import Run
from boxbench.publishing import run_audit

log = logging.getLogger(__name__)


def audit_run(run_id: str) -> None:
    """Run and store the statistical audit of a completed run (stats.audit); a re-run of a
    held-back pair is then published if it passed, and the next re-run started (reruns.finish)."""
    run = Run.objects.get(pk=run_id)
    try:
        run_audit(run)
    except Exception:  # the run's data stays; the audit can be re-run with `bench audit`
        log.exception("the audit of run %s failed; re-run it with `bench audit %s`", run.id, run.id)
        raise  # recorded as a failed task
    if reruns.rerun_of(run) is not None:
        log.info("%s", reruns.finish(run))
