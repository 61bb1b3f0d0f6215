"""One step of one provider's chain of a planned run (common methodology, "Independence").

`Chain.step(number)` runs one step on this job host: step 0 is the start (the live-sandbox check
with leftovers removed, the network-path baseline), then one step per (benchmark, round) batch of
the shuffled order, each with its `parallel_trials` workers, then one per top-up batch until a
stop condition holds. A worker starts its next trial only after the previous trial's sandboxes
are confirmed gone. Which step comes next, and where the chain stands between steps, is
runner/steps.py's business (the queue task, ChainProgress); this module never imports it. Why a
chain stopped early is recorded in the manifest (`chains.<provider>.stopped` or `.error`). Every
read and write goes through runner/store.py.
"""

from __future__ import annotations

import logging
import socket
import statistics
import threading
import time
from collections import defaultdict
from datetime import UTC, datetime

from django.conf import settings
from django.db import close_old_connections, connections

from boxbench.models import Run, RunStatus, Trial, TrialState
from runner import adapters, fault, outage, rules, runs, store, waiting
from runner.benchmarks import all_benchmarks
from runner.heartbeat import Heartbeat
from runner.labels import batch_label, run_prefix
from runner.lifecycle import run_trial
from runner.limits import Limits
from runner.manifest import (
    BackendWait,
    CreateSpacing,
    Endpoint,
    Leftovers,
    LiveCheck,
    Manifest,
    NetworkBaseline,
    TopUps,
)
from runner.outcomes import EvidenceKind, Outcome
from runner.plan import SEQ_BLOCK

log = logging.getLogger(__name__)

REFILLABLE = (Outcome.PROVIDER_FAILURE, Outcome.EXCLUDED, Outcome.MISSED)
# Confirming a leftover of an earlier run gone before this run starts: every 50 ms, for at least
# 5 s, on real time (nothing is measured here, and it runs once per chain).
LEFTOVER_GONE_POLL = waiting.every(0.05)


def can_top_up(trial: Trial) -> bool:
    """Lost slots are topped up; a benchmark error never is (it stops its unit)."""
    if trial.outcome == Outcome.BENCHMARK_ERROR:
        return not fault.stops_unit(trial.outcome, trial.owner)
    return trial.outcome in REFILLABLE


# Tests replace these: the lifecycle's limits, and the clock of the refill time limit.
lifecycle_limits = Limits()
top_up_clock = time.time


class CreateSpacer:
    """Spaces create calls to the provider's documented rate, outside every timed step."""

    def __init__(self, rate_per_s: float | None):
        self.interval = 1.0 / rate_per_s if rate_per_s else 0.0
        self._next = 0.0
        self._lock = threading.Lock()
        self.waits = 0
        self.waited_s = 0.0

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            pause = max(0.0, self._next - now)
            self._next = max(now, self._next) + self.interval
        if pause:
            self.waits += 1
            self.waited_s += pause
            time.sleep(pause)


class Chain:
    """One provider's trials of one run, executed on this job host."""

    def __init__(self, run: Run, provider_slug: str, memory: dict | None = None):
        self.run = run
        # What earlier steps left for this one (ChainProgress.memory).
        self.memory = dict(memory or {})
        self.slug = provider_slug
        # The plan part of the manifest, read once; changes go through store.update_manifest.
        self.manifest = run.typed_manifest
        self.info = self.manifest.providers[provider_slug]
        self.provider = adapters.provider_factory(provider_slug)
        self.modules = all_benchmarks()
        self.spacer = CreateSpacer(self.info.create_rate_per_s)
        self.stopped_units: set[tuple[str, str]] = {
            (b, u) for p, b, u in self.manifest.stopped_units if p == provider_slug
        }
        self.unreplaceable: str | None = self.memory.get("unreplaceable")
        # Set when a trial's resources may still exist: no worker of this chain starts another.
        self.halted: str | None = None
        self.top_up_stopped: str | None = None  # the refill time limit or budget, mid-round
        self._lock = threading.Lock()
        self.heartbeat = Heartbeat(f"{run.pk}-{provider_slug}", chain=(run.pk, provider_slug))
        self.backend = outage.BackendGate(self._wait_for_backend)

    # Steps: each is one queue task (runner/steps.py) -------------------------------------------

    def step(self, number: int) -> int | None:
        """Run step `number` of the chain; the next step's number, or None once it is done.

        0 is the start (empty account verification, network baseline); 1 to len(order) are the
        shuffled order's batches; the steps after them are top-up rounds, one batch each.
        """
        order = self.manifest.chain_order(self.slug)
        if self._cancelled():
            self._finish()
            return None
        if number == 0:
            busy = self.check_account()
            if busy:
                store.cancel_queued(
                    self.run, f"the chain did not start: {busy}", provider__slug=self.slug
                )
                self._record_stop(stopped=busy)
                return None
            self._network_baseline()
            self._record_job_host()
            return 1
        if number <= len(order) and not self.memory.get("halted"):
            self.run_batch(*order[number - 1])
            if not self.halted:
                return number + 1
            self._stop_chain()
            return len(order) + 1
        following = self._top_up_step(number)
        if self.halted:
            # A top-up batch halted: the round's other batches do not run either, and the next
            # step stops refilling (the reason is unreplaceable).
            self._stop_chain()
            self.memory["topup"]["pending"] = []
        return following

    def _stop_chain(self) -> None:
        """A batch halted: no further trial of this chain runs. A backend that never came back
        fails the chain (its `error`); unverified cleanup stops it (`stopped`)."""
        halted = self.memory["halted"] = self.halted
        store.cancel_queued(self.run, f"the chain stopped: {halted}", provider__slug=self.slug)
        gone = self.backend.gave_up is not None and not self.backend.gave_up.abandoned
        if gone:
            self._record_stop(error=halted)
        else:
            self._record_stop(stopped=halted)

    def memory_out(self) -> dict:
        """What the next step must know, kept in the database between steps."""
        spacing = self.memory.setdefault("spacing", {"waits": 0, "waited_s": 0.0})
        spacing["waits"] += self.spacer.waits
        spacing["waited_s"] = round(spacing["waited_s"] + self.spacer.waited_s, 3)
        self.spacer.waits, self.spacer.waited_s = 0, 0.0
        if self.unreplaceable:
            self.memory["unreplaceable"] = self.unreplaceable
        return self.memory

    def _finish(self) -> None:
        self._record_spacing()
        if self._cancelled():
            store.cancel_queued(self.run, "the run was cancelled", provider__slug=self.slug)
            runs.cleanup_run_sandboxes(self.run, [self.slug])

    def check_account(self) -> str | None:
        """Empty account verification before the chain starts: why it must not start, or None.

        boxbench's own leftovers (a batch of an earlier or lost run that no running trial
        uses) are destroyed first and recorded. Other live sandboxes (foreign, or a batch of
        another run still in use) stop the chain unless the run allows a busy account; either
        way their count and ids are in the manifest.
        """
        entry = self._record_live("before_chain", self._remove_leftovers)
        if self.manifest.plan is not None and self.manifest.plan.allow_busy_account:
            return None
        if entry.error is not None:
            return f"the account's live sandboxes could not be listed: {entry.error}"
        if entry.others:
            ids = ", ".join((entry.other_ids or [])[:10])
            return (
                f"the account holds {entry.others} other live sandbox(es) ({ids}); remove "
                "them (bench cleanup) or start the run with --allow-busy-account"
            )
        return None

    def _remove_leftovers(self, live: list) -> bool:
        """Destroy boxbench's own leftovers among `live`; True if any was found."""
        prefix = run_prefix(self.run.id)
        labels = {s.label for s in live if not s.label.startswith(prefix)}
        leftover = store.leftover_batches(labels)
        found = [s for s in live if s.label in leftover]
        if not found:
            return False
        removed, errors = [], []
        for sandbox in found:
            try:
                self.provider.destroy(sandbox)
                if not wait_gone(self.provider, sandbox.id, lifecycle_limits.gone_timeout_s):
                    raise TimeoutError("still listed after destroy")
            except Exception as exc:  # noqa: BLE001 - left for the live check to count
                errors.append(f"{sandbox.id}: {type(exc).__name__}: {exc}")
            else:
                removed.append(sandbox.id)
        record = Leftovers(removed=removed, batches=sorted({s.label for s in found}), errors=errors)
        store.update_manifest(self.run.pk, lambda m: m.leftovers.__setitem__(self.slug, record))
        return True

    def _cancelled(self) -> bool:
        status = store.run_status(self.run.pk)
        return status != RunStatus.RUNNING

    # One batch: a (benchmark, round) block ----------------------------------------------------

    def run_batch(self, benchmark: str, round_no: int) -> None:
        label = batch_label(self.run.id, self.slug, benchmark, round_no)
        queued = store.queued_in_batch(self.run, self.slug, label)
        if not queued:
            return
        self._record_live(f"{label}:start")
        pending = list(queued)
        stop = threading.Event()
        crashes: list[BaseException] = []

        def worker():
            try:
                while not stop.is_set() and self.backend.open():
                    with self._lock:
                        if not pending:
                            return
                        trial = pending.pop(0)
                    if self._cancelled():
                        return
                    if round_no > rules.ROUNDS and (over := self._top_up_over()):
                        # Checked before every top-up trial, not only when the round opened.
                        with self._lock:
                            pending.insert(0, trial)
                            self.top_up_stopped = over
                            self.memory["topup"]["limit"] = over
                        stop.set()
                        return
                    if (benchmark, trial.unit.slug) in self.stopped_units:
                        store.cancel_queued(
                            self.run,
                            "unit stopped on this provider by an earlier benchmark error",
                            pk=trial.pk,
                        )
                        continue
                    result = self.run_one(trial, benchmark)
                    if result is not None and not result.cleanup_verified:
                        # Its resources may still exist: this worker starts no further trial.
                        stop.set()
                        self.halted = "resource cleanup could not be verified"
                        self._unreplaceable("resource cleanup could not be verified")
                        self._unreplaceable_batch(label)
                    elif result is not None and not self._backend_back(trial, result):
                        stop.set()  # the backend never came back: no worker starts another trial
            except BaseException as exc:  # noqa: B036, BLE001 - re-raised in the chain's thread below
                stop.set()
                crashes.append(exc)
            finally:
                if threading.current_thread() is not threading.main_thread():
                    connections.close_all()

        parallel = self.manifest.benchmarks[benchmark].parallel_trials
        self._run_workers(worker, min(parallel, len(queued)))
        if crashes:
            raise crashes[0]
        with self._lock:
            left = list(pending)
        if (stop.is_set() or self.backend.gave_up) and left:
            reason = self.halted or self.top_up_stopped
            why = f"the batch stopped: {reason}" if reason else "the batch stopped early"
            store.cancel_queued(self.run, why, pk__in=[t.pk for t in left])
        self._record_live(f"{label}:end")
        self._store_in_flight(label)

    def _run_workers(self, worker, count: int) -> None:
        if count == 1:
            worker()
            return
        threads = [
            threading.Thread(target=worker, name=f"{self.slug}-worker-{i}", daemon=True)
            for i in range(count)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        close_old_connections()

    def run_one(self, trial: Trial, benchmark: str):
        if not store.claim_trial(trial.pk, settings.JOB_HOST):
            return None  # delivered twice: someone else runs it
        self.heartbeat.add(trial.pk)
        try:
            module = self.modules[benchmark]
            unit = next(u for u in module.units() if u.slug == trial.unit.slug)
            result = run_trial(
                self.provider,
                module.DEFINITION,
                unit,
                module.run,
                label=trial.batch,
                lifetime_s=min(
                    module.DEFINITION.lifetime_s, settings.SANDBOX_LIFETIME_MINUTES * 60
                ),
                pricing=self.provider.declaration.pricing,
                limits=lifecycle_limits,
                space=self.spacer.wait,
            )
            # Every trial says what its job host is, beside its name (claim_trial).
            result.host_load = {**(result.host_load or {}), **self._job_host}
            try:
                store.save_result(trial.pk, result)
            except store.TrialNotRunning:
                # Recovery ended it while this worker was silent (a database outage longer
                # than the orphan limit): it stays cut short, and this result is not stored.
                log.warning("trial %s was recovered while running: result dropped", trial.pk)
                return result
        finally:
            self.heartbeat.remove(trial.pk)
        if fault.stops_unit(result.outcome, result.owner):
            self._stop_unit(benchmark, trial.unit.slug)
        if any(
            e.kind == EvidenceKind.CREATE_ERROR and e.data.get("code") == "spend_limit"
            for e in result.evidence
        ):
            self._unreplaceable("the account's spend limit was reached")
        return result

    def _backend_back(self, trial: Trial, result) -> bool:
        """After a create the backend could not be reached for, wait until it answers again
        before this worker (or any other of the chain) starts a trial; False if it never did."""
        reason = next(
            (
                e.data["unreachable"]
                for e in result.evidence
                if e.kind == EvidenceKind.CREATE_ERROR and e.data.get("unreachable")
            ),
            None,
        )
        if reason is None:
            return True
        wait = self.backend.wait_out(reason)
        if wait is None:
            return False  # another worker's wait gave up already
        record = BackendWait(
            trial_seq=trial.seq,
            reason=wait.reason,
            started_at=datetime.fromtimestamp(wait.started_at, UTC).isoformat(),
            waited_s=wait.waited_s,
            probes=wait.probes,
            back=wait.back,
            last_error=wait.last_error,
            abandoned=wait.abandoned,
        )
        store.update_manifest(
            self.run.pk, lambda m: m.backend_waits.setdefault(self.slug, []).append(record)
        )
        if wait.back:
            return True
        with self._lock:
            self.halted = wait.abandoned or (
                f"the backend stayed unreachable for {wait.waited_s:.0f} s of waiting "
                f"(BOXBENCH_BACKEND_WAIT_SECONDS) after a create failed ({reason}); "
                f"last probe: {wait.last_error}"
            )
        self._unreplaceable(self.halted)
        return False

    def _wait_for_backend(self, reason: str) -> outage.Wait:
        timer = lifecycle_limits.timer
        return outage.wait_for_backend(
            lambda: outage.probe(self.provider),
            reason,
            outage.WaitPolicy(bound_s=settings.RUNNER_BACKEND_WAIT_S),
            sleep=timer.sleep,
            monotonic=timer.monotonic,
            abandon=lambda: "the run was cancelled" if self._cancelled() else None,
        )

    def _stop_unit(self, benchmark: str, unit: str) -> None:
        with self._lock:
            self.stopped_units.add((benchmark, unit))
        store.update_manifest(self.run.pk, lambda m: m.stop_unit(self.slug, benchmark, unit))

    def _unreplaceable(self, reason: str) -> None:
        with self._lock:
            self.unreplaceable = self.unreplaceable or reason

    def _unreplaceable_batch(self, label: str) -> None:
        store.update_manifest(self.run.pk, lambda m: m.batches_stopped_early.append(label))

    # Top-ups ---------------------------------------------------------------------------------

    def _top_up_step(self, number: int) -> int | None:
        """One step of the top-up rounds: open a round (queue its replacements), or run one of
        its batches; the round's gain is counted once its last batch ran."""
        t = self.memory.setdefault("topup", {})
        if not t:
            t.update(started_at=top_up_clock(), round=rules.ROUNDS, rounds=0, without_gain=0)
            t.update(pending=[], before=0)
        if t["pending"]:
            self.run_batch(t["pending"].pop(0), t["round"])
            if not t["pending"]:
                state = self._top_up_state(t)
                state.after_round(self._successes() - t["before"])
                t["rounds"], t["without_gain"] = state.rounds, state.rounds_without_gain
            return number + 1
        plan = self._top_up_plan()
        reason = rules.top_up_stop(
            self._top_up_state(t),
            top_up_clock(),
            self._spent_usd(),
            limit_reached=t.get("limit"),
            units_left=bool(plan),
            unreplaceable=self.unreplaceable or self._outcome_unknown(),
            cancelled=self._cancelled(),
        )
        if reason:
            stopped = TopUps(rounds=t["rounds"], stopped=reason)
            store.update_manifest(self.run.pk, lambda m: m.topups.__setitem__(self.slug, stopped))
            self._finish()
            return None
        t["round"] += 1
        t["before"] = self._successes()
        for benchmark, unit, failed in plan:
            self._queue_replacements(benchmark, unit, failed, t["round"])
        t["pending"] = sorted({b for b, _, _ in plan})
        return number + 1

    def _top_up_over(self) -> str | None:
        t = self.memory.get("topup")
        if not t:
            return None
        return rules.top_up_limit(self._top_up_state(t), top_up_clock(), self._spent_usd())

    def _top_up_state(self, t: dict) -> rules.TopUpState:
        plan = self.manifest.plan
        return rules.TopUpState(
            started_at=t["started_at"],
            time_limit_s=(plan.refill_minutes if plan else 10.0) * 60,
            budget_usd=plan.budget_usd if plan else None,
            rounds_without_gain=t["without_gain"],
            rounds=t["rounds"],
        )

    def _top_up_plan(self) -> list:
        """[(benchmark, unit, [failed trials without a replacement])] that need top-ups."""
        plan = []
        by_unit = defaultdict(list)
        for trial in store.chain_trials(self.run, self.slug):
            by_unit[(trial.benchmark.slug, trial.unit.slug)].append(trial)
        replaced = store.replaced_trial_ids(self.run)
        for (benchmark, unit), unit_trials in sorted(by_unit.items()):
            if (benchmark, unit) in self.stopped_units:
                continue
            target = self.manifest.benchmarks[benchmark].trials_per_unit
            successes = sum(t.outcome == Outcome.SUCCESS for t in unit_trials)
            attempts = sum(t.state == TrialState.DONE for t in unit_trials)
            failed = [
                t
                for t in unit_trials
                if t.state == TrialState.DONE and can_top_up(t) and t.pk not in replaced
            ]
            count = min(rules.top_ups_for_unit(target, successes, attempts), len(failed))
            if count:
                plan.append((benchmark, unit, failed[:count]))
        return plan

    def _queue_replacements(self, benchmark, unit_slug, failed, round_no) -> None:
        base = self.info.seq_base
        last = store.last_seq(self.run, base, base + SEQ_BLOCK - 1) or base
        label = batch_label(self.run.id, self.slug, benchmark, round_no)
        store.queue_replacements(self.run, failed, round_no, last, label)

    def _outcome_unknown(self) -> str | None:
        """A trial of this chain was cut short (by its limit, or recovered after its worker was
        lost): its outcome is unknown, so refilling stops. Read from the stored flag, not memory,
        so trials ended by runner/recovery.py count too."""
        flagged = store.outcome_unknown(self.run, self.slug)
        return "a trial was cut short, so its outcome is unknown" if flagged else None

    def _successes(self) -> int:
        return store.successes(self.run, self.slug)

    def _spent_usd(self) -> float:
        return store.spent_usd(self.run)

    # Bookkeeping -------------------------------------------------------------------------------

    def _store_in_flight(self, label: str) -> None:
        store.set_in_flight(rules.in_flight_means(store.held_spans(self.run, label)))

    def _record_live(self, moment: str, first=None) -> LiveCheck:
        """Other live sandboxes in the account (not this run's), checked outside timed steps.

        `first(live)` may act on the listing (remove leftovers); when it did, the account is
        listed again for the record.
        """
        try:
            live = self.provider.list_sandboxes()
            if first is not None and first(live):
                live = self.provider.list_sandboxes()
        except Exception as exc:  # noqa: BLE001 - recorded; before the chain it also stops it
            entry = LiveCheck(error=f"{type(exc).__name__}: {exc}")
        else:
            prefix = run_prefix(self.run.id)
            others = [s.id for s in live if not s.label.startswith(prefix)]
            entry = LiveCheck(
                others=len(others),
                other_ids=others[:50],
                own=len(live) - len(others),
                at=datetime.now(UTC).isoformat(),
            )
        store.update_manifest(self.run.pk, lambda m: m.record_live(self.slug, moment, entry))
        return entry

    @property
    def _job_host(self) -> dict:
        return {
            "job_host_type": settings.JOB_HOST_TYPE,
            "job_host_region": settings.JOB_HOST_REGION,
        }

    def _record_job_host(self) -> None:
        """The chain runs on its job host: the manifest records that host's type and region."""

        def change(manifest: Manifest) -> None:
            entry = manifest.providers[self.slug]
            entry.job_host_type = settings.JOB_HOST_TYPE
            entry.job_host_region = settings.JOB_HOST_REGION

        store.update_manifest(self.run.pk, change)

    def _network_baseline(self) -> None:
        try:
            endpoints = self.provider.endpoints()
        except Exception as exc:  # noqa: BLE001 - an adapter defect is recorded, not fatal
            endpoints, error = [], f"{type(exc).__name__}: {exc}"
            failed = NetworkBaseline(error=error)
            store.update_manifest(
                self.run.pk, lambda m: m.network_baselines.__setitem__(self.slug, failed)
            )
        if not endpoints:
            return
        baseline = NetworkBaseline(
            job_host=settings.JOB_HOST,
            endpoints=[network_baseline(host, port) for host, port in endpoints],
        )
        store.update_manifest(
            self.run.pk, lambda m: m.network_baselines.__setitem__(self.slug, baseline)
        )

    def _record_spacing(self) -> None:
        totals = self.memory_out()["spacing"]
        spacing = CreateSpacing(
            create_rate_per_s=self.info.create_rate_per_s,
            min_interval_s=self.spacer.interval,
            waits=totals["waits"],
            waited_s=totals["waited_s"],
        )
        store.update_manifest(
            self.run.pk, lambda m: m.create_spacing.__setitem__(self.slug, spacing)
        )

    def _record_stop(self, stopped: str | None = None, error: str | None = None) -> None:
        """Why the chain stopped early: its end record in the manifest (runs.chain_notes)."""
        store.update_manifest(
            self.run.pk, lambda m: m.stop_chain(self.slug, stopped=stopped, error=error)
        )


def wait_gone(provider, sandbox_id: str, timeout_s: float) -> bool:
    return waiting.poll_until(
        lambda: provider.is_gone(sandbox_id), max(timeout_s, 5.0), LEFTOVER_GONE_POLL
    )


def network_baseline(host: str, port: int, attempts: int = 10, timeout: float = 5.0) -> Endpoint:
    """Median TCP connect time to one endpoint over `attempts`: untimed, no API call."""
    times, errors = [], []
    for _ in range(attempts):
        started = time.monotonic()
        try:
            with socket.create_connection((host, port), timeout=timeout):
                times.append((time.monotonic() - started) * 1000)
        except OSError as exc:
            errors.append(str(exc))
    return Endpoint(
        host=host,
        port=port,
        median_connect_ms=statistics.median_low(times) if times else None,
        attempts=attempts,
        errors=errors[:3],
    )
