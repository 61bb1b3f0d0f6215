"""Plan a run and execute one provider's chain of trials (common methodology, "Independence").

plan_run():     eligibility refusals before anything starts, a shuffled interleaved order per
                provider with the seed in the manifest, one Trial row per planned attempt.
execute_chain(): one provider on one job host: the live-sandbox check, the network-path baseline,
                then each (benchmark, round) batch with `concurrency` workers, then top-up rounds
                until a stop condition holds. A worker starts its next trial only after the previous
                trial's sandboxes are confirmed gone. When the last chain ends, the run finishes and
                its audit runs.
"""

from __future__ import annotations

import logging
import platform
import random
import socket
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime

import django
from django.conf import settings
from django.db import close_old_connections, connections, transaction
from django.db.models import Sum

from boxbench.models import (
    Evidence,
    Outcome,
    Run,
    RunStatus,
    Trial,
    TrialState,
    Unit,
)
from runner import planning, store
from runner.benchmarks import all_benchmarks
from runner.catalog import sync_catalog
from runner.declarations import DeclarationError, load_all
from runner.images.build import ImageError
from runner.lifecycle import Limits, run_trial
from runner.providers import get_provider, unavailable
from runner.providers.base import ProviderError

log = logging.getLogger(__name__)

MANIFEST_SCHEMA = 1
SEQ_BLOCK = 1_000_000  # each provider's trials take their own seq range, so top-ups never collide
REFILLABLE = (Outcome.PROVIDER_FAILURE, Outcome.EXCLUDED, Outcome.MISSED)

# Tests replace these: how a chain gets its provider adapter, and the lifecycle's limits.
provider_factory: Callable = get_provider
lifecycle_limits = Limits()


class PlanError(ValueError):
    """The requested plan cannot run (unknown names, nothing eligible, bad numbers)."""


def batch_label(run_id, provider: str, benchmark: str, round_no: int) -> str:
    return f"{run_prefix(run_id)}{provider}-{benchmark}-r{round_no}"


def run_prefix(run_id) -> str:
    return f"bb-{str(run_id).replace('-', '')[:12]}-"


# -- planning ---------------------------------------------------------------------------


def plan_run(
    name: str,
    *,
    benchmarks: list[str] | None = None,
    providers: list[str] | None = None,
    trials: int | None = None,
    concurrency: int | None = None,
    seed: int | None = None,
    job_hosts: dict[str, str] | None = None,
    budget_usd: float | None = None,
    refill_minutes: float = 10.0,
    units: dict[str, list[str]] | None = None,
    allow_busy_account: bool = False,
    actor=None,
) -> Run:
    """Create a planned Run with its manifest and queued trials; refusals are recorded, not run.

    `concurrency` overrides every benchmark's declared parallel trials for this run; `units`
    limits a benchmark to some of its units ({slug: [unit slugs]}); `allow_busy_account` lets a
    chain start although the account holds other live sandboxes (recorded in the manifest).
    """
    modules = all_benchmarks()
    declarations = load_all()
    benchmarks = list(dict.fromkeys(benchmarks or modules))
    named = bool(providers)  # unnamed: every declared provider that can run here
    providers = list(dict.fromkeys(providers or declarations))
    unknown = [b for b in benchmarks if b not in modules]
    if unknown:
        raise PlanError(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(modules)}")
    unknown = [p for p in providers if p not in declarations]
    if unknown:
        known = ", ".join(declarations)
        raise PlanError(f"unknown provider(s) {', '.join(unknown)}; known: {known}")
    if problems := unavailable(providers):  # unconfigured, or its SDK not installed
        if named:
            raise PlanError(f"provider(s) cannot run here: {'; '.join(problems)}")
        providers = [p for p in providers if not any(x.startswith(f"{p}: ") for x in problems)]
    if concurrency is not None and not 1 <= concurrency <= 256:
        raise PlanError(f"concurrency must be between 1 and 256, got {concurrency}")
    units = units or {}
    for slug, wanted in units.items():
        if slug not in benchmarks:
            raise PlanError(f"units are given for {slug}, which the plan does not include")
        known = [u.slug for u in modules[slug].units()]
        missing = [u for u in wanted if u not in known]
        if missing or not wanted:
            raise PlanError(
                f"unknown unit(s) {', '.join(missing) or '(none given)'} of {slug}; "
                f"known: {', '.join(known)}"
            )
    parallel = {
        slug: planning.parallel_trials(
            modules[slug].DEFINITION,
            concurrency,
            settings.RUNNER_CONCURRENCY,
            settings.RUNNER_JOB_HOST_CAP,
        )
        for slug in benchmarks
    }
    if trials is not None and not 1 <= trials <= 10_000:
        raise PlanError(f"trials per unit must be between 1 and 10000, got {trials}")
    if budget_usd is not None and budget_usd <= 0:
        raise PlanError(f"the run budget must be positive, got {budget_usd}")
    seed = seed if seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)

    refusals, eligible = [], defaultdict(list)
    for provider in providers:
        for slug in benchmarks:
            found = planning.refusals(
                declarations[provider], modules[slug].DEFINITION, parallel[slug]
            )
            refusals += found
            if not found:
                eligible[provider].append(slug)
    if not eligible:
        reasons = "; ".join(r.message for r in refusals)
        raise PlanError(f"no provider is eligible for any requested benchmark: {reasons}")

    provider_rows, benchmark_rows = sync_catalog()
    job_hosts = job_hosts or {}
    manifest = {
        "schema_version": MANIFEST_SCHEMA,
        "seed": seed,
        "plan": {
            "benchmarks": benchmarks,
            "providers": providers,
            "trials_per_unit": trials,
            "concurrency": concurrency,  # the override; None: each benchmark's declaration
            "job_host_cap": settings.RUNNER_JOB_HOST_CAP,
            "allow_busy_account": allow_busy_account,
            "budget_usd": budget_usd,
            "refill_minutes": refill_minutes,
            "rounds": planning.ROUNDS,
        },
        "refusals": [r.to_dict() for r in refusals],
        "versions": _versions(),
        # Per provider: the image every number of its chain ran on (results.image_digest).
        "images": {provider: image_identity(provider) for provider in sorted(eligible)},
        "benchmarks": {},
        "providers": {},
        "chains": {},
        "network_baselines": {},
        "live_sandboxes": {},
        "create_spacing": {},
        "stopped_units": [],
        "topups": {},
    }
    for slug in benchmarks:
        d = modules[slug].DEFINITION
        manifest["benchmarks"][slug] = {
            "version": d.version,
            "trials_per_unit": trials or d.trials_per_unit,
            "ranking_floor": d.ranking_floor,
            "units": units.get(slug) or [u.slug for u in modules[slug].units()],
            "parallel_trials": parallel[slug],
            "declared_parallel_trials": d.parallel_trials,
            "sandboxes_per_trial": d.sandboxes_per_trial,
        }
    with transaction.atomic():
        run = Run.objects.create(name=name, manifest=manifest, created_by=actor)
        for index, provider in enumerate(sorted(eligible)):
            declaration = declarations[provider]
            order = planning.chain_order(sorted(eligible[provider]), rng)
            manifest["providers"][provider] = {
                "declaration_digest": declaration.digest,
                "pricing_digest": declaration.pricing_digest,
                "job_host": job_hosts.get(provider, settings.JOB_HOST),
                "create_rate_per_s": declaration.create_rate_per_s,
                "seq_base": index * SEQ_BLOCK,
            }
            manifest["chains"][provider] = {
                "order": [list(block) for block in order],
                "status": "planned",
            }
            _create_trials(run, provider_rows[provider], benchmark_rows, order, index)
        run.manifest = manifest
        run.save(update_fields=["manifest"])
    return run


def _create_trials(run, provider_row, benchmark_rows, order, index) -> None:
    seq = index * SEQ_BLOCK
    rows = []
    per_round = {}
    for slug, round_no in order:
        benchmark = benchmark_rows[slug]
        planned = run.manifest["benchmarks"][slug]
        per_round.setdefault(slug, planning.split_rounds(planned["trials_per_unit"]))
        # The planned units only: rows of retired units stay for old runs.
        slugs = planned["units"]
        units = list(Unit.objects.filter(benchmark=benchmark, slug__in=slugs).order_by("slug"))
        for _ in range(per_round[slug][round_no - 1]):
            for unit in units:
                seq += 1
                rows.append(
                    Trial(
                        run=run,
                        benchmark=benchmark,
                        unit=unit,
                        provider=provider_row,
                        round=round_no,
                        seq=seq,
                        batch=batch_label(run.id, provider_row.slug, slug, round_no),
                    )
                )
    Trial.objects.bulk_create(rows)


def image_identity(provider: str) -> dict:
    """What a provider's sandboxes run, as the manifest records it: {"reference", "digest"} from
    the adapter's standard_image() (docker: the pinned standard image; local: the host toolchain,
    runner/providers/local.py), or {"error"} saying why it is unknown; never fatal to the plan,
    the chain's own create reports a missing image."""
    try:
        adapter = provider_factory(provider)
        standard_image = getattr(adapter, "standard_image", None)
        if standard_image is None:
            return {"error": f"the {provider} adapter names no standard image"}
        reference, digest = standard_image()
    except (ProviderError, ImageError, DeclarationError, OSError) as exc:
        return {"error": f"{provider}: cannot identify its image: {exc}"}
    return {"reference": reference, "digest": digest}


def _versions() -> dict:
    return {
        "python": platform.python_version(),
        "django": django.get_version(),
        "platform": platform.platform(),
    }


# -- manifest updates -------------------------------------------------------------------


def update_manifest(run_id, change: Callable[[dict], None]) -> dict:
    """Apply `change` to the run's manifest under a row lock: chains write it concurrently."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        change(run.manifest)
        Run.objects.filter(pk=run_id).update(manifest=run.manifest)
    return run.manifest


# -- executing a chain ------------------------------------------------------------------


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

    def __init__(self, run: Run, provider_slug: str):
        self.run = run
        self.slug = provider_slug
        self.info = run.manifest["providers"][provider_slug]
        self.provider = provider_factory(provider_slug)
        self.modules = all_benchmarks()
        self.spacer = CreateSpacer(self.info.get("create_rate_per_s"))
        self.stopped_units: set[tuple[str, str]] = {
            (b, u) for p, b, u in run.manifest.get("stopped_units", []) if p == provider_slug
        }
        self.unreplaceable: str | None = None
        # Set when a trial's resources may still exist: no worker of this chain starts another.
        self.halted: str | None = None
        self._lock = threading.Lock()

    # The whole chain ---------------------------------------------------------------------------

    def execute(self) -> None:
        self._set_chain_status("running")
        busy = self._check_account()
        if busy:
            store.cancel_queued(
                self.run, f"the chain did not start: {busy}", provider__slug=self.slug
            )
            update_manifest(
                self.run.pk,
                lambda m: m["chains"][self.slug].update(status="done", stopped=busy),
            )
            return
        self._network_baseline()
        for benchmark, round_no in self.run.manifest["chains"][self.slug]["order"]:
            if self._cancelled() or self.halted:
                break
            self.run_batch(benchmark, round_no)
        if self.halted:
            halted = self.halted
            store.cancel_queued(self.run, f"the chain stopped: {halted}", provider__slug=self.slug)
            update_manifest(self.run.pk, lambda m: m["chains"][self.slug].update(stopped=halted))
        if not self._cancelled():
            self.top_up()
        self._record_spacing()
        if self._cancelled():
            store.cancel_queued(self.run, "the run was cancelled", provider__slug=self.slug)
            cleanup_run_sandboxes(self.run, [self.slug])
        self._set_chain_status("done")

    def _check_account(self) -> str | None:
        """Empty account verification before the chain starts: why it must not start, or None.

        Other live sandboxes (not this run's) stop the chain unless the run allows a busy
        account; either way their count and ids are in the manifest.
        """
        entry = self._record_live("before_chain")
        if self.run.manifest["plan"].get("allow_busy_account"):
            return None
        if "error" in entry:
            return f"the account's live sandboxes could not be listed: {entry['error']}"
        if entry["others"]:
            ids = ", ".join(entry["other_ids"][:10])
            return (
                f"the account holds {entry['others']} other live sandbox(es) ({ids}); remove "
                "them (bench cleanup) or start the run with --allow-busy-account"
            )
        return None

    def _cancelled(self) -> bool:
        status = Run.objects.filter(pk=self.run.pk).values_list("status", flat=True).first()
        return status != RunStatus.RUNNING

    # One batch: a (benchmark, round) block ----------------------------------------------------

    def run_batch(self, benchmark: str, round_no: int) -> None:
        label = batch_label(self.run.id, self.slug, benchmark, round_no)
        queued = list(
            Trial.objects.filter(
                run=self.run, provider__slug=self.slug, batch=label, state=TrialState.QUEUED
            )
            .select_related("unit")
            .order_by("seq")
        )
        if not queued:
            return
        self._record_live(f"{label}:start")
        pending = list(queued)
        stop = threading.Event()
        crashes: list[BaseException] = []

        def worker():
            try:
                while not stop.is_set():
                    with self._lock:
                        if not pending:
                            return
                        trial = pending.pop(0)
                    if self._cancelled():
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
            except BaseException as exc:  # noqa: B036 - re-raised in the chain's thread below
                stop.set()
                crashes.append(exc)
            finally:
                if threading.current_thread() is not threading.main_thread():
                    connections.close_all()

        parallel = self.run.manifest["benchmarks"][benchmark]["parallel_trials"]
        self._run_workers(worker, min(parallel, len(queued)))
        if crashes:
            raise crashes[0]
        with self._lock:
            left = list(pending)
        if stop.is_set() and left:
            store.cancel_queued(self.run, "the batch stopped early", pk__in=[t.pk for t in left])
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
        module = self.modules[benchmark]
        unit = next(u for u in module.units() if u.slug == trial.unit.slug)
        self.spacer.wait()
        result = run_trial(
            self.provider,
            module.DEFINITION,
            unit,
            module.run,
            label=trial.batch,
            lifetime_s=min(module.DEFINITION.lifetime_s, settings.SANDBOX_LIFETIME_MINUTES * 60),
            pricing=self.provider.declaration.pricing,
            limits=lifecycle_limits,
        )
        store.save_result(trial.pk, result)
        if result.outcome == Outcome.BENCHMARK_ERROR:
            self._stop_unit(benchmark, trial.unit.slug)
        if any(
            e.kind == "create_error" and e.data.get("code") == "spend_limit"
            for e in result.evidence
        ):
            self._unreplaceable("the account's spend limit was reached")
        return result

    def _stop_unit(self, benchmark: str, unit: str) -> None:
        with self._lock:
            self.stopped_units.add((benchmark, unit))
        update_manifest(
            self.run.pk,
            lambda m: (
                m["stopped_units"].append([self.slug, benchmark, unit])
                if [self.slug, benchmark, unit] not in m["stopped_units"]
                else None
            ),
        )

    def _unreplaceable(self, reason: str) -> None:
        with self._lock:
            self.unreplaceable = self.unreplaceable or reason

    def _unreplaceable_batch(self, label: str) -> None:
        update_manifest(
            self.run.pk,
            lambda m: m.setdefault("batches_stopped_early", []).append(label),
        )

    # Top-ups ---------------------------------------------------------------------------------

    def top_up(self) -> None:
        limit_s = float(self.run.manifest["plan"].get("refill_minutes", 10)) * 60
        state = planning.RefillState(
            target=0,
            started_at=time.monotonic(),
            time_limit_s=limit_s,
            budget_usd=self.run.manifest["plan"].get("budget_usd"),
        )
        round_no = planning.ROUNDS
        reason = None
        while True:
            plan = self._refill_plan()
            if not plan:
                reason = "every unit reached its target or its 2N attempts"
                break
            reason = planning.refill_stop_reason(
                state,
                time.monotonic(),
                self._spent_usd(),
                self.unreplaceable or self._outcome_unknown(),
            )
            if reason or self._cancelled():
                reason = reason or "the run was cancelled"
                break
            round_no += 1
            before = self._successes()
            for benchmark, unit, failed in plan:
                self._queue_replacements(benchmark, unit, failed, round_no)
            for benchmark in sorted({b for b, _, _ in plan}):
                self.run_batch(benchmark, round_no)
            state.after_round(self._successes() - before)
        stopped = {"rounds": state.rounds, "stopped": reason}
        update_manifest(self.run.pk, lambda m: m["topups"].__setitem__(self.slug, stopped))

    def _refill_plan(self) -> list:
        """[(benchmark, unit, [failed trials without a replacement])] that need refills."""
        plan = []
        trials = Trial.objects.filter(run=self.run, provider__slug=self.slug).select_related(
            "benchmark", "unit"
        )
        by_unit = defaultdict(list)
        for trial in trials:
            by_unit[(trial.benchmark.slug, trial.unit.slug)].append(trial)
        replaced = set(
            Trial.objects.filter(run=self.run, replaces__isnull=False).values_list(
                "replaces_id", flat=True
            )
        )
        for (benchmark, unit), unit_trials in sorted(by_unit.items()):
            if (benchmark, unit) in self.stopped_units:
                continue
            target = self.run.manifest["benchmarks"][benchmark]["trials_per_unit"]
            successes = sum(t.outcome == Outcome.SUCCESS for t in unit_trials)
            attempts = sum(t.state == TrialState.DONE for t in unit_trials)
            failed = [
                t
                for t in unit_trials
                if t.state == TrialState.DONE and t.outcome in REFILLABLE and t.pk not in replaced
            ]
            count = min(planning.refills_for_unit(target, successes, attempts), len(failed))
            if count:
                plan.append((benchmark, unit, failed[:count]))
        return plan

    def _queue_replacements(self, benchmark, unit_slug, failed, round_no) -> None:
        base = self.info["seq_base"]
        last = (
            Trial.objects.filter(run=self.run, seq__gt=base, seq__lte=base + SEQ_BLOCK - 1)
            .order_by("-seq")
            .values_list("seq", flat=True)
            .first()
        ) or base
        Trial.objects.bulk_create(
            Trial(
                run=self.run,
                benchmark=old.benchmark,
                unit=old.unit,
                provider=old.provider,
                round=round_no,
                seq=last + i,
                attempt=old.attempt + 1,
                replaces=old,
                batch=batch_label(self.run.id, self.slug, benchmark, round_no),
            )
            for i, old in enumerate(failed, start=1)
        )

    def _outcome_unknown(self) -> str | None:
        """A trial of this chain was cut short (by its limit, or recovered after its worker was
        lost): its outcome is unknown, so refilling stops. Read from the stored flag, not memory,
        so trials ended by runner/recovery.py count too."""
        flagged = Evidence.objects.filter(
            trial__run=self.run,
            trial__provider__slug=self.slug,
            kind="lifecycle",
            data__outcome_unknown=True,
        ).exists()
        return "a trial was cut short, so its outcome is unknown" if flagged else None

    def _successes(self) -> int:
        return Trial.objects.filter(
            run=self.run, provider__slug=self.slug, outcome=Outcome.SUCCESS
        ).count()

    def _spent_usd(self) -> float:
        total = Trial.objects.filter(run=self.run).aggregate(total=Sum("cost_usd"))["total"]
        return float(total or 0.0)

    # Bookkeeping -------------------------------------------------------------------------------

    def _store_in_flight(self, label: str) -> None:
        held = {}
        for trial_id, data in Evidence.objects.filter(
            trial__run=self.run, trial__batch=label, kind="lifecycle"
        ).values_list("trial_id", "data"):
            held[trial_id] = [tuple(span) for span in data.get("held", [])]
        for trial_id, mean in planning.in_flight_means(held).items():
            Trial.objects.filter(pk=trial_id).update(in_flight=mean)

    def _record_live(self, moment: str) -> dict:
        """Other live sandboxes in the account (not this run's), checked outside timed steps."""
        try:
            live = self.provider.list_sandboxes()
        except Exception as exc:  # noqa: BLE001 - recorded; before the chain it also stops it
            entry = {"error": f"{type(exc).__name__}: {exc}"}
        else:
            prefix = run_prefix(self.run.id)
            others = [s.id for s in live if not s.label.startswith(prefix)]
            entry = {
                "others": len(others),
                "other_ids": others[:50],
                "own": len(live) - len(others),
                "at": datetime.now(UTC).isoformat(),
            }
        update_manifest(
            self.run.pk,
            lambda m: m["live_sandboxes"].setdefault(self.slug, {}).__setitem__(moment, entry),
        )
        return entry

    def _network_baseline(self) -> None:
        try:
            endpoints = self.provider.endpoints()
        except Exception as exc:  # noqa: BLE001 - an adapter defect is recorded, not fatal
            endpoints, error = [], f"{type(exc).__name__}: {exc}"
            update_manifest(
                self.run.pk,
                lambda m: m["network_baselines"].__setitem__(self.slug, {"error": error}),
            )
        if not endpoints:
            return
        baseline = {
            "job_host": settings.JOB_HOST,
            "endpoints": [network_baseline(host, port) for host, port in endpoints],
        }
        update_manifest(
            self.run.pk, lambda m: m["network_baselines"].__setitem__(self.slug, baseline)
        )

    def _record_spacing(self) -> None:
        spacing = {
            "create_rate_per_s": self.info.get("create_rate_per_s"),
            "min_interval_s": self.spacer.interval,
            "waits": self.spacer.waits,
            "waited_s": round(self.spacer.waited_s, 3),
        }
        update_manifest(self.run.pk, lambda m: m["create_spacing"].__setitem__(self.slug, spacing))

    def _set_chain_status(self, status: str) -> None:
        update_manifest(self.run.pk, lambda m: m["chains"][self.slug].__setitem__("status", status))


def network_baseline(host: str, port: int, attempts: int = 10, timeout: float = 5.0) -> dict:
    """Median TCP connect time to one endpoint over `attempts`: untimed, no API call."""
    times, errors = [], []
    for _ in range(attempts):
        started = time.monotonic()
        try:
            with socket.create_connection((host, port), timeout=timeout):
                times.append((time.monotonic() - started) * 1000)
        except OSError as exc:
            errors.append(str(exc))
    return {
        "host": host,
        "port": port,
        "median_connect_ms": statistics.median_low(times) if times else None,
        "attempts": attempts,
        "errors": errors[:3],
    }


def execute_chain(run_id, provider_slug: str) -> None:
    """Run one provider's chain, then finish the run if it was the last chain."""
    run = Run.objects.get(pk=run_id)
    if run.status != RunStatus.RUNNING:
        log.info("run %s is %s: chain %s not started", run_id, run.status, provider_slug)
        update_manifest(run_id, lambda m: m["chains"][provider_slug].__setitem__("status", "done"))
    else:
        try:
            Chain(run, provider_slug).execute()
        except Exception as exc:
            # A defect in the runner itself: stop the run rather than leave it running forever.
            log.exception("chain %s of run %s failed", provider_slug, run_id)
            error = f"{type(exc).__name__}: {exc}"
            update_manifest(
                run_id,
                lambda m: m["chains"][provider_slug].update(status="done", error=error),
            )
            fail_run(run_id, f"chain {provider_slug} failed: {error}")
            raise
    finish_if_done(run_id)


def fail_run(run_id, note: str) -> None:
    run = Run.objects.get(pk=run_id)
    if run.status in (RunStatus.PLANNED, RunStatus.RUNNING, RunStatus.CANCELLING):
        run.transition(RunStatus.FAILED, note=note[:2000])
        store.cancel_queued(run, f"the run failed: {note[:200]}")


def finish_if_done(run_id) -> bool:
    """Move the run to its end state once every chain is done, then audit it."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        chains = run.manifest.get("chains", {})
        chains_done = all(chain.get("status") == "done" for chain in chains.values())
        if not chains_done and run.status != RunStatus.CANCELLING:
            return False
        if run.status == RunStatus.RUNNING:
            run.transition(RunStatus.COMPLETED, note="every provider chain finished")
        elif run.status == RunStatus.CANCELLING:
            if Trial.objects.filter(run=run, state=TrialState.RUNNING).exists():
                return False
            run.transition(RunStatus.CANCELLED, note="every running trial ended")
        else:
            return False
    if run.status == RunStatus.COMPLETED:
        audit_run(run)
    return True


def audit_run(run: Run) -> None:
    """Run and store the statistical audit (boxbench.results.run_audit, over stats.audit)."""
    from boxbench import results

    try:
        results.run_audit(run)
    except Exception:  # the run's data stays; the audit can be re-run with `bench audit`
        log.exception("the audit of run %s failed; re-run it with `bench audit %s`", run.id, run.id)


# -- cancelling and cleanup ---------------------------------------------------------------


def cancel_run(run: Run, actor=None) -> int:
    """Cancel a run: queued trials never start, and its sandboxes are cleaned up.

    Returns the number of sandboxes removed. Running trials end on their own and clean up their
    own sandboxes; the run becomes cancelled once none is running.
    """
    if run.status == RunStatus.PLANNED:
        run.transition(RunStatus.CANCELLED, note="cancelled before it started", actor=actor)
    elif run.status == RunStatus.RUNNING:
        run.transition(RunStatus.CANCELLING, note="cancel requested", actor=actor)
    store.cancel_queued(run, "the run was cancelled")
    removed = cleanup_run_sandboxes(run, list(run.manifest.get("providers", {})))
    if run.status == RunStatus.CANCELLING:
        finish_if_done(run.pk)
        run.refresh_from_db()
    return removed


def cleanup_run_sandboxes(run: Run, providers: list[str]) -> int:
    """Destroy the run's sandboxes that no running trial holds, on each provider."""
    prefix = run_prefix(run.id)
    busy = set(
        Trial.objects.filter(run=run, state=TrialState.RUNNING).values_list("batch", flat=True)
    )
    removed = 0
    for slug in providers:
        try:
            provider = provider_factory(slug)
            live = provider.list_sandboxes()
        except Exception:  # noqa: BLE001 - one unreachable provider must not stop the others
            log.exception("cannot list the sandboxes of %s to clean up run %s", slug, run.id)
            continue
        for sandbox in live:
            if sandbox.label.startswith(prefix) and sandbox.label not in busy:
                try:
                    provider.destroy(sandbox)
                except Exception:  # noqa: BLE001 - the rest are still cleaned up
                    log.exception("cannot destroy %s sandbox %s", slug, sandbox.id)
                    continue
                removed += 1
    return removed


# -- progress --------------------------------------------------------------------------------


def chain_notes(run: Run) -> list[str]:
    """Why a provider's chain stopped before or during the run, one sentence per chain."""
    notes = []
    for slug, chain in sorted(run.manifest.get("chains", {}).items()):
        for key in ("stopped", "error"):
            if chain.get(key):
                notes.append(f"{slug}: {chain[key]}")
    return notes


def progress(run: Run) -> list[dict]:
    """Per provider and benchmark: successes against the target, failures, and what is queued."""
    targets = {slug: b["trials_per_unit"] for slug, b in run.manifest.get("benchmarks", {}).items()}
    units = {slug: len(b["units"]) for slug, b in run.manifest.get("benchmarks", {}).items()}
    cells: dict = {}
    rows = Trial.objects.filter(run=run).values_list(
        "provider__slug", "benchmark__slug", "state", "outcome"
    )
    for provider, benchmark, state, outcome in rows:
        cell = cells.setdefault(
            (provider, benchmark),
            {
                "provider": provider,
                "benchmark": benchmark,
                "target": targets.get(benchmark, 0) * units.get(benchmark, 1),
                "done": 0,
                "failures": 0,
                "queued": 0,
                "running": 0,
                "cancelled": 0,
            },
        )
        if state == TrialState.DONE and outcome == Outcome.SUCCESS:
            cell["done"] += 1
        elif state == TrialState.DONE:
            cell["failures"] += 1
        else:
            cell[state] += 1
    for refusal in run.manifest.get("refusals", []):
        cells.setdefault(
            (refusal["provider"], refusal["benchmark"]),
            {
                "provider": refusal["provider"],
                "benchmark": refusal["benchmark"],
                "refusal": f"{refusal['code']} {planning.REFUSAL_LABELS[refusal['code']]}",
                "missing": refusal["missing"],
            },
        )
    return [cells[key] for key in sorted(cells)]
