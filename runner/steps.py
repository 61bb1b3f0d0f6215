"""A provider's chain as a sequence of steps, one django-q2 task each, with its state in the
database (ChainProgress, the chain's one live state), so a task's timeout bounds one batch, not a
whole chain, and a chain whose worker was lost resumes from the step it was on.

The queue's entry points are here: `start_run` (the admin, `bench run`) and the task
`chain_step`, enqueued by name (TASK), routed to the queue of its job host's cluster (Q_CLUSTER
name = BOXBENCH_JOB_HOST), so with the Redis broker one qcluster per job host runs each
provider's steps on its own machine. `execute_chain` runs a chain's steps in this process
(`bench run --inline`, tests). The walk goes down: this module -> runner/chain.py (one step) ->
runner/lifecycle.py (one trial) -> runner/store.py (its write); none of them imports this one.

Steps (runner/chain.py `Chain.step`): 0 the start (empty account verification, network
baseline), then one per (benchmark, round) batch of the shuffled order, then one per top-up
batch. A task claims its step with a conditional UPDATE (queued -> running, on the step number),
so a task delivered twice, or re-enqueued by recovery while the first copy still waited in the
queue, runs the step once; inside it every trial is still claimed by its own conditional UPDATE.

Lanes: "each provider's chain runs on its own dedicated cloud job host, so one provider's workload
cannot slow another provider's timings". Chains planned on one job host never run at the same
time: they form a lane and take turns step by step in provider order (A's start, B's start, A's
round 1 batch, B's round 1 batch, ...), so each is timed alone on its host and host drift reaches
them alike. A provider given a dedicated host (`--job-host provider=host`) is a lane of one and
runs alongside the others.

Recovery (runner/recovery.py) re-enqueues a running step whose heartbeat is stale, and a queued
step that has waited longer than the orphan limit (its task may have been lost with a broker).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django_q.tasks import async_task

from boxbench.models import ChainProgress, Run, RunStatus
from runner import runs, store
from runner.chain import Chain
from runner.outcomes import ChainState

log = logging.getLogger(__name__)
TASK = "runner.steps.chain_step"  # the queue imports it by this name: keep it in step


def cluster_for(job_host: str) -> str:
    """The qcluster that serves `job_host`: this machine's own cluster name, or the host's."""
    if job_host == settings.JOB_HOST:
        return str(settings.Q_CLUSTER["cluster_name"])
    return job_host


def lane_of(job_host: str) -> str:
    """Every chain on a job host is in that host's lane: one step at a time runs there."""
    return f"host:{job_host}"


def lanes(run: Run) -> dict[str, list[str]]:
    """{lane: [providers]} of the run's job hosts, in turn order."""
    found: dict[str, list[str]] = {}
    for slug, info in sorted(run.typed_manifest.providers.items()):
        found.setdefault(lane_of(info.job_host), []).append(slug)
    return found


def start_run(run: Run) -> None:
    """Move a planned run to running and enqueue the first step of each chain (or lane)."""
    run.transition(RunStatus.RUNNING, note="started", actor=run.created_by)
    start(run)


def start(run: Run) -> None:
    """Create the run's chain states and enqueue the first step of each lane and lone chain."""
    rows, first = [], set()
    for slug, info in sorted(run.typed_manifest.providers.items()):
        lane = lane_of(info.job_host)
        leads = lane not in first
        first.add(lane)
        state = ChainState.QUEUED if leads else ChainState.WAITING
        rows.append((slug, info.job_host, lane, state))
    store.create_progress(run, rows)
    for slug, job_host, _, state in rows:
        if state == ChainState.QUEUED:
            enqueue(run.pk, slug, 0, job_host)


def enqueue(run_id, provider: str, step: int, job_host: str) -> None:
    async_task(
        TASK,
        str(run_id),
        provider,
        step,
        cluster=cluster_for(job_host),
        task_name=f"run {run_id} chain {provider} step {step}",
        group=str(run_id),
    )


def chain_step(run_id: str, provider: str, number: int) -> None:
    """The queue task: run one step, then give the lane's next turn (or this chain's next
    step) to its queue."""
    progress = store.progress(run_id, provider)
    if progress.step != number or progress.state != ChainState.QUEUED:
        return  # a duplicate delivery: the step ran, or runs elsewhere
    run_step(progress)
    turn = store.queue_turn(run_id, progress.lane, after=provider)
    if turn is not None:
        enqueue(run_id, turn.provider, turn.step, turn.job_host)


def run_step(progress: ChainProgress, *, inline: bool = False) -> int | None:
    """Claim and run the step `progress` (as read) says is next; the next step's number, or None
    (done, or the step was not this task's to run)."""
    run_id, provider, number = progress.run_id, progress.provider, progress.step
    if not store.claim_step(run_id, provider, number):
        log.info("run %s chain %s step %s: not queued, nothing to do", run_id, provider, number)
        return None
    chain = Chain(store.get_run(run_id), provider, progress.memory)
    try:
        with chain.heartbeat:
            following = chain.step(number)
    except Exception as exc:
        # A defect in the runner itself, or a database away for longer than the store's
        # retries: stop the run rather than leave it running forever.
        log.exception("chain %s of run %s failed at step %s", provider, run_id, number)
        error = f"{type(exc).__name__}: {exc}"
        try:
            store.update_manifest(run_id, lambda m: m.stop_chain(provider, error=error))
            store.end_step(run_id, provider, number, None, chain.memory)
        except store.DB_DOWN:
            pass  # the failure below is kept on disk and recorded once the database is back
        runs.fail_run(run_id, f"chain {provider} failed: {error}")
        raise
    store.end_step(run_id, provider, number, following, chain.memory_out())
    if following is None:
        runs.finish_if_done(run_id, inline=inline)
    return following


def execute_chain(run_id, provider: str, *, inline: bool = False) -> None:
    """Run one provider's chain to its end in this process, step after step (`bench run
    --inline`, tests); the queue runs the same steps one task each (`chain_step`).

    `inline` also runs the audit in this process once the run ends (no queue serves it)."""
    run = store.get_run(run_id)
    info = run.typed_manifest.providers[provider]
    store.create_progress(run, [(provider, info.job_host, "", ChainState.QUEUED)])
    while True:
        progress = store.progress(run_id, provider)
        if progress.state == ChainState.DONE:
            break
        if progress.state == ChainState.WAITING:
            store.set_queued(run_id, provider)
        if run_step(progress, inline=inline) is None:
            break
    # A chain that was done before this call (a redelivered task): the run may still be
    # waiting for it to say so.
    runs.finish_if_done(run_id, inline=inline)
