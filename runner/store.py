"""The narrow interface through which the runner reads and writes the database: every query and
write of planning, chains, run state changes and recovery is a function here, named for what it
does.

The chain's reads and writes (`@retrying`) ride out a database outage: a connection error is
retried with backoff for up to `RUNNER_DB_RETRY_S` seconds (outside a transaction only, since a
broken transaction cannot be resumed), so a blip neither loses a measured trial nor stops the
chain.

A trial is claimed by a conditional UPDATE (queued -> running) that must change exactly one row, so
a task delivered twice runs it once. A finished trial is written with its measurements and
evidence in one transaction, and only while it is still running: no half-written trial.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.db import (
    DEFAULT_DB_ALIAS,
    IntegrityError,
    InterfaceError,
    OperationalError,
    connection,
    connections,
    transaction,
)
from django.db.models import Count, Q, Sum
from django.db.models.functions import Now
from django.utils import timezone

# The stored-definition checks, shared with `bench import`; planning refuses a run on a conflict.
from boxbench.definitions import DefinitionConflict as DefinitionConflict
from boxbench.definitions import ensure_benchmark, ensure_provider, ensure_unit
from boxbench.models import (
    Benchmark,
    ChainProgress,
    Evidence,
    MeasurementName,
    Provider,
    Run,
    RunStatus,
    Trial,
    TrialState,
    Unit,
    UnsuccessfulCount,
)
from runner import rules, waiting
from runner.manifest import Manifest
from runner.outcomes import ChainState, EvidenceKind, MeasurementKind, Outcome
from runner.results import TrialResult

log = logging.getLogger(__name__)
# Connection-level errors only: an IntegrityError or a bad query is a defect, never retried.
DB_DOWN = (OperationalError, InterfaceError)
# Through a database outage: 0.25 s doubling up to 5 s, for up to RUNNER_DB_RETRY_S in all.
DB_BACKOFF = waiting.Backoff(first_s=0.25, factor=2, cap_s=5.0)
# Tests replace it to pass time without waiting.
sleep = time.sleep


class TrialNotRunning(Exception):
    pass


def retrying(func):
    """Retry `func` through a database outage of up to RUNNER_DB_RETRY_S seconds."""

    def outside_a_transaction(exc: BaseException) -> bool:
        return not connections[DEFAULT_DB_ALIAS].in_atomic_block

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        attempts = itertools.count(1)

        def reconnect(exc: BaseException, pause: float) -> None:
            log.warning(
                "database unavailable in %s (attempt %d): %s; retrying in %.2f s",
                func.__name__,
                next(attempts),
                str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                pause,
            )
            # Drop the broken connection: Django opens a new one on the next query.
            with suppress(*DB_DOWN):
                connections[DEFAULT_DB_ALIAS].close()

        return waiting.retry_while(
            outside_a_transaction,
            lambda: func(*args, **kwargs),
            settings.RUNNER_DB_RETRY_S,
            DB_BACKOFF,
            waiting.Clock(sleep=lambda seconds: sleep(seconds)),
            errors=DB_DOWN,
            on_retry=reconnect,
        )

    return wrapper


@retrying
def claim_trial(trial_id, job_host: str) -> bool:
    """Move a queued trial to running for this job host; False if anyone else got it first."""
    changed = Trial.objects.filter(pk=trial_id, state=TrialState.QUEUED).update(
        state=TrialState.RUNNING, job_host=job_host, started_at=timezone.now(), heartbeat_at=Now()
    )
    return changed == 1


def db_now() -> datetime:
    """The database's clock. Heartbeats are written and judged by it, so clock skew between
    job hosts cannot make a live trial look lost (or a lost one live)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT CURRENT_TIMESTAMP")
            return cursor.fetchone()[0]
        cursor.execute("SELECT STRFTIME('%Y-%m-%d %H:%M:%f', 'now')")
        return datetime.fromisoformat(cursor.fetchone()[0]).replace(tzinfo=UTC)


def beat(trial_ids: list) -> int:
    """Write the heartbeat of these trials while they run (runner/heartbeat.py)."""
    return Trial.objects.filter(pk__in=trial_ids, state=TrialState.RUNNING).update(
        heartbeat_at=Now()
    )


def save_result(trial_id, result: TrialResult, *, recognise: bool = True) -> Trial:
    """Write a finished trial; raises TrialNotRunning when it was not claimed (or was ended by
    recovery meanwhile). Retried through a database outage: a commit whose answer the outage
    swallowed is recognised by its own end time, not stored twice.

    `recognise=False` for a writer whose end time is not its own alone (two recovery sweeps can
    read the same database time): it recognises its own commit otherwise."""
    try:
        return _write_result(trial_id, result)
    except TrialNotRunning:
        if recognise and result.ended_at is not None:
            stored = Trial.objects.filter(
                pk=trial_id,
                state=TrialState.DONE,
                outcome=result.outcome,
                ended_at=result.ended_at,
            ).first()
            if stored is not None:
                return stored
        raise


def measurement_columns(result: TrialResult) -> dict:
    """The trial's metrics, stages and clock gates as its row holds them (boxbench.models.Trial)."""
    groups: dict[str, dict] = {MeasurementKind.METRIC: {}, MeasurementKind.STAGE: {}}
    gates: dict[str, dict] = {}
    for m in result.measurements:
        groups[m.kind][m.name] = m.value
        if m.gate:
            gates.setdefault(f"{m.kind}s", {})[m.name] = m.gate
    metrics, stages = groups[MeasurementKind.METRIC], groups[MeasurementKind.STAGE]
    return {"metrics": metrics, "stages": stages, "clock_gates": gates or None}


@retrying
def _write_result(trial_id, result: TrialResult) -> Trial:
    with transaction.atomic():
        changed = Trial.objects.filter(pk=trial_id, state=TrialState.RUNNING).update(
            state=TrialState.DONE,
            outcome=result.outcome,
            owner=result.owner,
            cause=result.cause[:4000],
            cut_short=result.cut_short,
            started_at=result.started_at,
            ended_at=result.ended_at,
            placement=result.placement,
            host_load=result.host_load,
            cost_usd=result.cost_usd,
            requests=result.requests,
            **measurement_columns(result),
        )
        if changed != 1:
            raise TrialNotRunning(f"trial {trial_id} is not running: its result was not stored")
        trial = Trial.objects.get(pk=trial_id)
        key = (trial.run_id, trial.benchmark_id)
        names = {(m.kind, m.name) for m in result.measurements}
        new = [m for m in result.measurements if (m.kind, m.name) not in _names_known(key)]
        MeasurementName.objects.bulk_create(
            (
                MeasurementName(
                    run_id=trial.run_id,
                    benchmark_id=trial.benchmark_id,
                    kind=m.kind,
                    name=m.name,
                    unit=m.unit,
                    clock=m.clock,
                )
                for m in new
            ),
            # The first trial of the run to record a name declares it; names are the benchmarks'
            # own, with one unit and clock each.
            ignore_conflicts=True,
        )
        if new:
            transaction.on_commit(lambda: _names_stored(key, names))
        lifecycle = {"held": result.held, "cleanup_verified": result.cleanup_verified}
        Evidence.objects.bulk_create(
            [
                *(
                    Evidence(trial_id=trial_id, kind=e.kind, at=e.at, data=e.data)
                    for e in result.evidence
                ),
                Evidence(trial_id=trial_id, kind=EvidenceKind.LIFECYCLE, data=lifecycle),
            ]
        )
    return trial


# The measurement names this process has seen stored, per (run, benchmark) of its latest runs: a
# chain's trials record the same names, and inserting them again for every trial (conflicts
# ignored) was a third of the write's statements' time (bench/bench_control_plane.py).
_NAMES_KEPT = 64
_names: dict[tuple, frozenset] = {}
_names_lock = threading.Lock()


def _names_known(key: tuple) -> frozenset:
    with _names_lock:
        return _names.get(key, frozenset())


def _names_stored(key: tuple, names: set) -> None:
    """Called once the transaction that stored `names` has committed: a rolled-back write leaves
    them unknown, so the next trial inserts them again."""
    with _names_lock:
        _names[key] = _names.pop(key, frozenset()) | names
        while len(_names) > _NAMES_KEPT:
            del _names[next(iter(_names))]


@retrying
def cancel_queued(run, reason: str, **filters) -> int:
    """Mark queued trials cancelled (they never ran), with the reason as their cause."""
    return Trial.objects.filter(run=run, state=TrialState.QUEUED, **filters).update(
        state=TrialState.CANCELLED, cause=reason
    )


# -- stored definitions -------------------------------------------------------------------------


@dataclass(frozen=True)
class CodeDefinition:
    """A provider's declaration or a benchmark's definition as the code states it."""

    values: dict  # the row's fields
    origin: str  # where the code states it, for a refusal's message
    units: tuple[dict, ...] = ()  # a benchmark's units, each a Unit row's fields


def store_definitions(
    providers: list[CodeDefinition], benchmarks: list[CodeDefinition]
) -> tuple[dict[str, Provider], dict[str, Benchmark]]:
    """The definitions as stored rows by slug, in one transaction: each created when new, reused
    when identical. One that differs from its stored row raises DefinitionConflict, naming what
    differs, and nothing is written."""
    with transaction.atomic():
        provider_rows = {d.values["slug"]: ensure_provider(d.values, d.origin) for d in providers}
        benchmark_rows = {}
        for definition in benchmarks:
            row = ensure_benchmark(definition.values, definition.origin)
            for unit in definition.units:
                ensure_unit(row, unit, definition.origin)
            benchmark_rows[definition.values["slug"]] = row
    return provider_rows, benchmark_rows


# -- planning -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedBlock:
    """One (benchmark, round) block of a provider's chain: `per_unit` trials of each unit."""

    benchmark: Benchmark
    round: int
    per_unit: int
    units: list[str]  # the planned unit slugs
    batch: str


@dataclass(frozen=True)
class PlannedChain:
    provider: Provider
    seq_base: int  # its trials take seq_base + 1, + 2, ... in block order
    blocks: list[PlannedBlock]


class LabelsTaken(ValueError):
    """Another run holds the label digits of the run to be created (runner/labels.py)."""

    def __init__(self, run_id, holder: Run):
        super().__init__(
            f"run id {run_id} begins with the digits of run {holder.id} ({holder.name!r}), "
            "which name every sandbox of a run: plan the run again for a new id"
        )


def create_run(run_id, name: str, manifest: Manifest, actor, chains: list[PlannedChain]) -> Run:
    """Create a planned run with one queued Trial per planned attempt, in one transaction.

    LabelsTaken when another run, planned meanwhile on another host, holds the id's label
    digits: the database refuses the second one, so the two never share sandbox labels."""
    try:
        return _create_run(run_id, name, manifest, actor, chains)
    except IntegrityError:
        holder = Run.objects.sharing_labels_with(run_id)
        if holder is None:
            raise
        raise LabelsTaken(run_id, holder) from None


def _create_run(run_id, name, manifest, actor, chains: list[PlannedChain]) -> Run:
    with transaction.atomic():
        run = Run.objects.create(
            id=run_id, name=name, manifest=manifest.to_json(), created_by=actor
        )
        rows = []
        for chain in chains:
            seq = chain.seq_base
            for block in chain.blocks:
                # The planned units only: rows of retired units stay for old runs.
                units = list(
                    Unit.objects.filter(benchmark=block.benchmark, slug__in=block.units).order_by(
                        "slug"
                    )
                )
                for _ in range(block.per_unit):
                    for unit in units:
                        seq += 1
                        rows.append(
                            Trial(
                                run=run,
                                benchmark=block.benchmark,
                                unit=unit,
                                provider=chain.provider,
                                round=block.round,
                                seq=seq,
                                batch=block.batch,
                            )
                        )
        Trial.objects.bulk_create(rows)
    return run


# -- runs ---------------------------------------------------------------------------------------


@retrying
def get_run(run_id) -> Run:
    return Run.objects.get(pk=run_id)


@contextmanager
def locked_run(run_id) -> Iterator[Run]:
    """The run with its row locked until the block ends, in one transaction."""
    with transaction.atomic():
        yield Run.objects.select_for_update().get(pk=run_id)


@retrying
def update_manifest(run_id, change: Callable[[Manifest], None]) -> Manifest:
    """Apply `change` to the run's typed manifest under a row lock: chains write it concurrently."""
    with locked_run(run_id) as run:
        manifest = run.typed_manifest
        change(manifest)
        Run.objects.filter(pk=run_id).update(manifest=manifest.to_json())
    return manifest


@retrying
def unfinished_trials(run) -> int:
    """The run's trials still queued or running."""
    return Trial.objects.filter(run=run, state__in=(TrialState.QUEUED, TrialState.RUNNING)).count()


@retrying
def run_successes(run) -> int:
    return Trial.objects.filter(run=run, outcome=Outcome.SUCCESS).count()


@retrying
def trial_spans(run) -> list[rules.TrialSpan]:
    """When each of the run's trials held its job host, for the overlap record."""
    rows = Trial.objects.filter(run=run).values_list(
        "pk", "provider__slug", "job_host", "started_at", "ended_at"
    )
    return [
        rules.TrialSpan(str(pk), provider, job_host, started.timestamp(), ended.timestamp())
        for pk, provider, job_host, started, ended in rows
        if started and ended
    ]


def record_chain_overlaps(run_id) -> None:
    """The manifest names the chains that were timed at once on one job host (none, normally:
    chains on one host take turns, runner/steps.py)."""
    found = rules.chain_overlaps(trial_spans(get_run(run_id)))
    update_manifest(run_id, lambda m: setattr(m, "chain_overlaps", found))


@retrying
def has_running_trials(run) -> bool:
    return Trial.objects.filter(run=run, state=TrialState.RUNNING).exists()


@retrying
def running_batches(run) -> set[str]:
    """Batch labels of the run's running trials: their sandboxes are still in use."""
    return set(
        Trial.objects.filter(run=run, state=TrialState.RUNNING).values_list("batch", flat=True)
    )


@retrying
def trial_states(run) -> list[tuple[str, str, str, str, int]]:
    """(provider, benchmark, state, outcome, count) of the run's trials: one grouped query. The
    attempts a run imported from a public raw-data file knows only as counts count as finished
    trials of their outcome."""
    states = list(
        Trial.objects.filter(run=run)
        .values_list("provider__slug", "benchmark__slug", "state", "outcome")
        .annotate(n=Count("id"))
        .order_by()
    )
    counted = UnsuccessfulCount.objects.filter(run=run).values_list(
        "provider__slug", "benchmark__slug", "outcomes"
    )
    for provider, benchmark, outcomes in counted:
        states += [(provider, benchmark, TrialState.DONE, o, n) for o, n in outcomes.items()]
    return states


# -- a provider's chain -------------------------------------------------------------------------


@retrying
def run_status(run_id) -> str | None:
    """The run's status as stored now (another process may have cancelled it)."""
    return Run.objects.filter(pk=run_id).values_list("status", flat=True).first()


@retrying
def queued_in_batch(run, provider: str, batch: str) -> list[Trial]:
    """The batch's queued trials of one provider, in seq order, with their units."""
    return list(
        Trial.objects.filter(run=run, provider__slug=provider, batch=batch, state=TrialState.QUEUED)
        .select_related("unit")
        .order_by("seq")
    )


@retrying
def chain_trials(run, provider: str) -> list[Trial]:
    """Every trial of one provider's chain, with its benchmark and unit."""
    return list(
        Trial.objects.filter(run=run, provider__slug=provider).select_related("benchmark", "unit")
    )


@retrying
def replaced_trial_ids(run) -> set:
    """Ids of the run's trials that a top-up trial already replaces."""
    return set(
        Trial.objects.filter(run=run, replaces__isnull=False).values_list("replaces_id", flat=True)
    )


@retrying
def last_seq(run, low: int, high: int) -> int | None:
    """The highest seq of the run's trials in (low, high], or None when there is none."""
    return (
        Trial.objects.filter(run=run, seq__gt=low, seq__lte=high)
        .order_by("-seq")
        .values_list("seq", flat=True)
        .first()
    )


@retrying
def queue_replacements(run, failed: list[Trial], round_no: int, after_seq: int, batch: str) -> None:
    """Queue one top-up trial for each failed trial, numbered from after_seq + 1."""
    Trial.objects.bulk_create(
        Trial(
            run=run,
            benchmark=old.benchmark,
            unit=old.unit,
            provider=old.provider,
            round=round_no,
            seq=after_seq + i,
            attempt=old.attempt + 1,
            replaces=old,
            batch=batch,
        )
        for i, old in enumerate(failed, start=1)
    )


@retrying
def outcome_unknown(run, provider: str) -> bool:
    """A trial of this chain was cut short, so its outcome is unknown (an unknown owner alone
    is not)."""
    return Trial.objects.filter(run=run, provider__slug=provider, cut_short=True).exists()


@retrying
def successes(run, provider: str) -> int:
    return Trial.objects.filter(run=run, provider__slug=provider, outcome=Outcome.SUCCESS).count()


@retrying
def spent_usd(run) -> float:
    """What the run's trials have cost so far, over every provider."""
    total = Trial.objects.filter(run=run).aggregate(total=Sum("cost_usd"))["total"]
    return float(total or 0.0)


@retrying
def held_spans(run, batch: str) -> dict:
    """{trial id: [(start, end)]} of the batch's sandbox-holding spans (lifecycle evidence)."""
    held = {}
    for trial_id, data in Evidence.objects.filter(
        trial__run=run, trial__batch=batch, kind=EvidenceKind.LIFECYCLE
    ).values_list("trial_id", "data"):
        held[trial_id] = [tuple(span) for span in data.get("held", [])]
    return held


@retrying
def set_in_flight(means: dict) -> None:
    """Store each trial's mean number of other trials in flight ({trial id: mean}).

    In one transaction: an UPDATE committed per trial was a third commit for every trial."""
    rows = [Trial(pk=trial_id, in_flight=mean) for trial_id, mean in means.items()]
    Trial.objects.bulk_update(rows, ["in_flight"], batch_size=500)


# -- recovery -----------------------------------------------------------------------------------


def running_trials() -> list[tuple]:
    """(id, run id, provider, benchmark, batch, started_at, heartbeat_at, job_host) of every
    running trial, oldest first."""
    return list(
        Trial.objects.filter(state=TrialState.RUNNING)
        .values_list(
            "pk",
            "run_id",
            "provider__slug",
            "benchmark__slug",
            "batch",
            "started_at",
            "heartbeat_at",
            "job_host",
        )
        .order_by("started_at")
    )


def batches_in_use(batches: list[str]) -> set[tuple[str, str]]:
    """(provider, batch) of these batches that a running trial still uses."""
    return set(
        Trial.objects.filter(state=TrialState.RUNNING, batch__in=batches).values_list(
            "provider__slug", "batch"
        )
    )


def ended_by_sweep(trial_id, sweep: str) -> bool:
    """Whether this recovery sweep's own write ended the trial (its evidence names the sweep)."""
    return Evidence.objects.filter(
        trial_id=trial_id, kind=EvidenceKind.RECOVERY, data__sweep=sweep
    ).exists()


def cut_short_in(provider: str, batches: list[str]) -> list:
    """Ids of the finished trials cut short in these batches of the provider."""
    return list(
        Trial.objects.filter(
            provider__slug=provider, batch__in=batches, state=TrialState.DONE, cut_short=True
        ).values_list("pk", flat=True)
    )


def mark_cleanup_verified(trial_ids: list[str]) -> None:
    """Record on each trial's lifecycle evidence that its sandboxes are confirmed gone."""
    for evidence in Evidence.objects.filter(trial_id__in=trial_ids, kind=EvidenceKind.LIFECYCLE):
        evidence.data["cleanup_verified"] = True
        evidence.save(update_fields=["data"])


# -- chain progress (runner/steps.py) ------------------------------------------------------------


def create_progress(run, chains: list[tuple[str, str, str, ChainState]]) -> None:
    """One ChainProgress per (provider, job host, lane, initial state); existing rows are kept."""
    for provider, job_host, lane, state in chains:
        ChainProgress.objects.get_or_create(
            run=run,
            provider=provider,
            defaults={"job_host": job_host, "lane": lane, "state": state},
        )


@retrying
def progress(run_id, provider: str) -> ChainProgress:
    return ChainProgress.objects.get(run_id=run_id, provider=provider)


@retrying
def claim_step(run_id, provider: str, step: int) -> bool:
    """Move the chain's queued `step` to running; False if it is not (duplicate or late task)."""
    return (
        ChainProgress.objects.filter(
            run_id=run_id, provider=provider, step=step, state=ChainState.QUEUED
        ).update(state=ChainState.RUNNING, heartbeat_at=Now())
        == 1
    )


@retrying
def end_step(run_id, provider: str, step: int, next_step: int | None, memory: dict) -> None:
    """Record a step done: the next one waits for its turn, or the chain is done."""
    ChainProgress.objects.filter(
        run_id=run_id, provider=provider, step=step, state=ChainState.RUNNING
    ).update(
        state=ChainState.DONE if next_step is None else ChainState.WAITING,
        step=step if next_step is None else next_step,
        memory=memory,
        heartbeat_at=None,
    )


@retrying
def queue_turn(run_id, lane: str, after: str) -> ChainProgress | None:
    """Give the next turn of a lane (or of a lone chain) to the chain after `after`, in provider
    order and round again; the chosen one becomes queued. None when every chain there is done."""
    with transaction.atomic():
        rows = list(
            ChainProgress.objects.select_for_update()
            .filter(run_id=run_id, lane=lane, **({} if lane else {"provider": after}))
            .order_by("provider")
        )
        if any(r.state in (ChainState.QUEUED, ChainState.RUNNING) for r in rows):
            return None  # someone holds the turn already
        live = [r for r in rows if r.state == ChainState.WAITING]
        if not live:
            return None
        later = [r for r in live if r.provider > after]
        chosen = (later or live)[0]
        chosen.state, chosen.enqueued_at = ChainState.QUEUED, Now()
        chosen.save(update_fields=["state", "enqueued_at"])
        return chosen


def beat_chain(run_id, provider: str) -> None:
    ChainProgress.objects.filter(run_id=run_id, provider=provider, state=ChainState.RUNNING).update(
        heartbeat_at=Now()
    )


def lost_steps(stale_before, requeue_before) -> list[ChainProgress]:
    """Chains of live runs whose running step lost its heartbeat, or whose queued step has
    waited since `requeue_before` (a task the broker may have lost)."""
    live = (RunStatus.RUNNING, RunStatus.CANCELLING)
    return list(
        ChainProgress.objects.filter(run__status__in=live).filter(
            Q(state=ChainState.RUNNING, heartbeat_at__lt=stale_before)
            | Q(state=ChainState.QUEUED, enqueued_at__lt=requeue_before)
        )
    )


def requeue_step(chain: ChainProgress, stale_before) -> bool:
    """Queue a lost step again, conditional on it still being lost: the same step, still in the
    state read, its heartbeat (or enqueue time) still older than `stale_before`."""
    resumed = chain.state == ChainState.RUNNING
    still = Q(heartbeat_at__lt=stale_before) if resumed else Q(enqueued_at__lt=stale_before)
    changed = (
        ChainProgress.objects.filter(pk=chain.pk, state=chain.state, step=chain.step)
        .filter(still)
        .update(
            state=ChainState.QUEUED,
            enqueued_at=Now(),
            resumed=chain.resumed + (1 if resumed else 0),
        )
    )
    return changed == 1


def chains_done(run) -> bool:
    """Every chain the run's manifest plans is done: its ChainProgress row says so. A chain with
    no row yet has not started (`bench run --inline` creates each row as it reaches it)."""
    planned = set(run.typed_manifest.chains)
    done = ChainProgress.objects.filter(run=run, provider__in=planned, state=ChainState.DONE)
    return done.count() == len(planned)


@retrying
def set_queued(run_id, provider: str) -> None:
    ChainProgress.objects.filter(run_id=run_id, provider=provider, state=ChainState.WAITING).update(
        state=ChainState.QUEUED, enqueued_at=Now()
    )


@retrying
def leftover_batches(labels: set[str]) -> set[str]:
    """Of these sandbox labels, boxbench's own batches (known to this database) that no running
    trial uses: sandboxes left by a finished run, or by a trial lost with its worker."""
    known, in_use = set(), set()
    for batch, state in Trial.objects.filter(batch__in=labels).values_list("batch", "state"):
        known.add(batch)
        if state == TrialState.RUNNING:
            in_use.add(batch)
    return known - in_use


def unverified_cut_short(job_host: str) -> list[tuple]:
    """(id, run id, provider, batch) of finished trials cut short on `job_host` whose sandboxes
    are not confirmed gone: recovery on another host ended them but could not reach them."""
    return list(
        Trial.objects.filter(
            job_host=job_host,
            state=TrialState.DONE,
            cut_short=True,
            evidence__kind=EvidenceKind.LIFECYCLE,
            evidence__data__cleanup_verified=False,
        ).values_list("pk", "run_id", "provider__slug", "batch")
    )
