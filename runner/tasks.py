"""django-q2 entry points: plain functions taking IDs, so tests run them inline (sync).

One task per provider chain. Each chain is routed to the queue of its job host's cluster
(Q_CLUSTER name = BOXBENCH_JOB_HOST), so with the Redis broker one qcluster per job host runs
each provider's chain on its own machine; every trial records the host that ran it.
"""

from __future__ import annotations

from django.conf import settings
from django_q.tasks import async_task

from boxbench.models import Run, RunStatus
from runner import chain


def cluster_for(job_host: str) -> str:
    """The qcluster that serves `job_host`: this machine's own cluster name, or the host's."""
    if job_host == settings.JOB_HOST:
        return settings.Q_CLUSTER["name"]
    return job_host


def start_run(run: Run) -> None:
    """Move a planned run to running and enqueue one chain task per provider."""
    run.transition(RunStatus.RUNNING, note="started", actor=run.created_by)
    for slug, info in run.typed_manifest.providers.items():
        async_task(
            "runner.tasks.run_chain",
            str(run.pk),
            slug,
            cluster=cluster_for(info.job_host),
            task_name=f"run {run.pk} chain {slug}",
            group=str(run.pk),
        )


def run_chain(run_id: str, provider_slug: str) -> None:
    chain.execute_chain(run_id, provider_slug)
