"""One trial, start to finish: create, readiness check, timed procedure, cleanup confirmed gone.

`run_trial` never touches the database: it returns a TrialResult (outcome, owner, cause,
measurements, evidence, placement, job-host load, cost) that runner/store.py writes in one
transaction. Rules from the common methodology, "Trial Lifecycle" and "Timing and Clocks":

- create is timed on the job host's monotonic clock from adapter entry until it returns or raises;
- the readiness check sends `true` without the clock wrapper, retrying not-ready answers with
  backoff until its deadline (the numbers live in one place, runner/readiness.ReadinessPolicy);
  every attempt is kept as evidence. Timed-readiness benchmarks skip it;
- the procedure's first failed step ends the trial, with no retries inside it;
- every sandbox the trial created is destroyed and confirmed gone, then every snapshot and
  temporary image it made is deleted and confirmed gone; a trial is a success only then.

Create, the procedure and destroy each run under a watchdog with the definition's limit
(`create_timeout_s`, `procedure_timeout_s`, `destroy_timeout_s`), so a hung call cannot block the
worker: a create overrun is a provider failure; a procedure or destroy overrun cuts the trial short
(its outcome is unknown, which stops refilling; cause "cut short: ...", `cut_short`). Once the
trial has ended no further sandbox can be created, and cleanup also waits for a create still in
flight, so the worker never starts its next trial while a sandbox of this one may appear.

Exceptions: the adapter's errors, expected (ProviderError) or not, are provider failures naming
the error, except a credential the provider refused (CredentialsRejected, `adapter_failure`),
which is a benchmark error; an exception from our own benchmark code or the runner is a
benchmark error. The readiness check keeps the methodology's own rule: any error there other
than not-ready is the provider's.
"""

from __future__ import annotations

import dataclasses
import math
import shlex
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from runner import clock, fault, layers, outage
from runner.benchmarks.base import (
    BenchmarkDefinition,
    BenchmarkError,
    GuestRun,
    ProviderFailure,
    TrialContext,
    TrialOutcome,
    UnitDefinition,
)
from runner.cleanup import clean_up, destroy_entry
from runner.hostload import HostLoadSampler
from runner.ledger import SandboxLedger
from runner.limits import Limits
from runner.outcomes import (
    MAX_VALUE,
    Clock,
    ClockGate,
    EvidenceKind,
    MeasurementKind,
    Outcome,
    Owner,
)
from runner.placement import probe_placement
from runner.pricing import refused_cost
from runner.providers.base import (
    CredentialsRejected,
    ExecResult,
    ExecTimeout,
    ProviderError,
    Sandbox,
    SandboxSpec,
)
from runner.readiness import ReadinessFailed, readiness_check
from runner.results import EvidenceRecord, MeasurementRecord, TrialResult
from runner.trial_failures import (
    CreateFailed,
    CutShort,
    JobHostFailure,
    adapter_failure,
)
from runner.watchdog import LimitedCall, Overran, call_here, call_with_limit


class LifecycleContext(TrialContext):
    """The TrialContext a benchmark procedure sees (runner/benchmarks/base.py)."""

    def __init__(self, provider, definition, unit, result, spec: SandboxSpec, limits, space=None):
        self.provider = provider
        self._space = space  # the chain's create spacer: each sandbox waits its turn, untimed
        self.definition = definition
        self.unit = unit
        self.sandbox: Sandbox | None = None
        self.create_ms: float | None = None
        # Monotonic instants of the latest create's adapter entry and return (timed readiness).
        self.create_started: float | None = None
        self.create_returned: float | None = None
        self.readiness: dict | None = None
        self._result = result
        self._spec = spec
        self._limits = limits
        self.ledger = SandboxLedger()  # what cleanup destroys and the cost is billed for
        self._closed = False
        self._lock = threading.Lock()  # the result's records

    # -- sandboxes ---------------------------------------------------------------------------

    @property
    def spec(self) -> SandboxSpec:
        """The spec the trial's sandboxes are made in."""
        return self._spec

    def use_image(self, image: str) -> None:
        """Make the trial's sandboxes from now on start from `image`, made for its unit."""
        self._spec = dataclasses.replace(self._spec, image=image)

    def use_layer(self, layer: str) -> None:
        """Make the trial's sandboxes from now on start from `layer` (runner/layers.py)."""
        self._spec = dataclasses.replace(self._spec, layer=layer)

    def space_create(self) -> None:
        if self._space is not None:
            self._space()

    def create_sandbox(
        self, spec: SandboxSpec, name="create", make: Callable | None = None, *, spaced=False
    ) -> tuple[Sandbox, float]:
        """Create a sandbox timed from adapter entry (ms); the lifecycle cleans it up.

        `make` is the adapter call that returns the sandbox (default: create; restore and fork
        make sandboxes too), so each gets the same limit, registration and cleanup, and waits
        its turn at the provider's create rate first (unless `spaced`: the caller did).
        """
        if not spaced:
            self.space_create()
        call = self._create_call(spec, name, make, here=False)
        if call.error is not None:
            raise self._create_failure(name, call.error)
        self.create_started, self.create_returned = call.started, call.returned
        return call.value, _ms(call.elapsed_s)

    def create_here(self, name: str) -> tuple[Sandbox, float, float]:
        call = self._create_call(self._spec, name, None, here=True)
        if call.error is not None:
            failure = self._create_failure(name, call.error)
            raise CreateFailed(failure.cause, getattr(call.error, "code", "")) from None
        assert call.started is not None and call.returned is not None
        return call.value, call.started, call.returned

    def _create_call(self, spec, name, make, *, here: bool) -> LimitedCall:
        """The create call, registered for cleanup whenever it returns, its sandbox kept as
        evidence; an error is returned, an overrun raised."""
        if not self.ledger.begin_create():
            raise ProviderFailure(f"{name}: refused, the trial has already ended")
        held_from = time.time()

        def register(call: LimitedCall) -> None:
            # Runs whenever create returns, even past its limit, so cleanup can destroy it.
            self.ledger.end_create(call.value if call.error is None else None, spec, held_from)

        limit = self.definition.create_timeout_s
        make = make or (lambda: self.provider.create(spec))
        try:
            call = (
                call_here(make, register) if here else call_with_limit(make, limit, name, register)
            )
        except Overran as exc:
            self.evidence(
                EvidenceKind.CREATE_ERROR, {"name": name, "error": str(exc), "code": "overran"}
            )
            raise ProviderFailure(f"{name}: {exc}") from None
        if call.error is None:
            sandbox = call.value
            self.evidence(
                EvidenceKind.SANDBOX,
                {
                    "name": name,
                    "id": sandbox.id,
                    "create_ms": _ms(call.elapsed_s),
                    "facts": sandbox.facts,
                },
            )
            if self._closed:
                raise ProviderFailure(f"{name}: the trial ended while this create was running")
        return call

    def _create_failure(self, name: str, error: BaseException) -> TrialOutcome:
        """A failed create as the trial's outcome, kept as evidence."""
        if isinstance(error, TrialOutcome):
            return error
        failure = adapter_failure(name, error)
        data = {"name": name, "error": failure.cause, "code": getattr(error, "code", "")}
        self.evidence(EvidenceKind.CREATE_ERROR, data | {"unreachable": outage.unreachable(error)})
        return failure

    def new_sandbox(self, spec_overrides: dict | None = None, timed_readiness: bool = False):
        spec = dataclasses.replace(self._spec, **(spec_overrides or {}))
        sandbox, _ = self.create_sandbox(spec, name=f"create_{self.ledger.sandbox_count() + 1}")
        if not timed_readiness:
            self.check_readiness(sandbox)
        return sandbox

    def snapshot(self, sandbox: Sandbox, name: str | None = "snapshot_ms") -> tuple[str, float]:
        """Snapshot `sandbox`, timed from adapter entry (ms) and recorded as metric `name` when
        given; the snapshot is deleted and confirmed gone at cleanup, even one that returns past
        the limit."""

        def register(call: LimitedCall) -> None:
            if call.error is None:
                self.ledger.add_snapshot(call.value)

        limit = self.definition.create_timeout_s
        try:
            snap = lambda: self.provider.snapshot(sandbox)  # noqa: E731
            call = call_with_limit(snap, limit, name or "snapshot", register)
        except Overran as exc:
            raise ProviderFailure(f"snapshot: {exc}") from None
        if call.error is not None:
            raise adapter_failure("snapshot", call.error)
        elapsed = _ms(call.elapsed_s)
        try:  # outside the timed span: no probe inside it
            self.provider.check_snapshot(sandbox, call.value)
        except ProviderError as exc:
            raise adapter_failure("snapshot", exc) from None
        self.evidence(
            EvidenceKind.SNAPSHOT, {"id": call.value, "source": sandbox.id, "ms": elapsed}
        )
        if name:
            self.record(name, elapsed, clock=Clock.JOB_HOST)
        return call.value, elapsed

    def restore(self, snapshot_id: str, name="restore", *, spaced=False) -> tuple[Sandbox, float]:
        """A sandbox restored from `snapshot_id` in the trial's spec, timed like create; no
        readiness check runs (the first timed step goes as soon as restore returns)."""
        spec = self._spec
        return self.create_sandbox(
            spec, name, lambda: self.provider.restore(snapshot_id, spec), spaced=spaced
        )

    def fork(self, sandbox: Sandbox, name: str = "fork") -> tuple[Sandbox, float]:
        """A copy of `sandbox` in the trial's spec, timed like create, with no readiness check."""
        spec = self._spec
        return self.create_sandbox(spec, name, lambda: self.provider.fork(sandbox, spec))

    def check_readiness(self, sandbox: Sandbox) -> dict:
        try:
            timer = self._limits.timer
            evidence = readiness_check(
                self.provider,
                sandbox,
                self._limits.readiness,
                sleep=timer.sleep,
                monotonic=timer.monotonic,
            )
        except ReadinessFailed as exc:
            self.evidence(EvidenceKind.READINESS, {"sandbox": sandbox.id, **exc.evidence})
            raise
        self.evidence(EvidenceKind.READINESS, {"sandbox": sandbox.id, **evidence})
        return evidence

    def destroy_sandbox(self, sandbox: Sandbox | None = None, name: str | None = None) -> float:
        """Destroy a sandbox now (the Destroy benchmark), timed from adapter entry.

        Returns the time in ms and records it as metric `name` when given. Cleanup still
        confirms it gone.
        """
        target = sandbox or self.sandbox
        assert target is not None, "the trial's own sandbox is made before its procedure runs"
        entry = self.ledger.entry(target)
        if entry is None:
            raise BenchmarkError(f"sandbox {target.id} was not created by this trial")
        try:
            elapsed = destroy_entry(self.provider, entry, self.definition.destroy_timeout_s)
        except Overran as exc:
            self._result.cut_short = True
            raise CutShort(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - any adapter error is the provider's
            raise adapter_failure("destroy", exc) from None
        if name:
            self.record(name, elapsed, clock=Clock.JOB_HOST)
        return elapsed

    # -- TrialContext --------------------------------------------------------------------------

    def timed(self, name: str, call: Callable[[], Any]) -> Any:
        started = time.monotonic()
        try:
            value = call()
        except CredentialsRejected as exc:
            raise adapter_failure(name, exc) from None
        except ProviderError as exc:
            raise ProviderFailure(f"{name}: {type(exc).__name__}: {exc}") from None
        self.record(name, _ms(time.monotonic() - started), clock=Clock.JOB_HOST)
        return value

    def guest(
        self,
        command: str,
        timeout: float,
        workdir: str | None = None,
        *,
        check_gate: bool = True,
        sandbox: Sandbox | None = None,
    ) -> GuestRun:
        key = clock.new_key()
        after, stdin = self._key_channel(sandbox, key)
        started = time.monotonic()
        # The exit code is judged with the trailer (_guest_run), not here: a command that forged a
        # trailer and then killed its own shell is the benchmark's fault, not a kill from outside.
        result = self._exec(
            sandbox,
            ["/bin/bash", "-c", clock.wrap(command), *after],
            timeout,
            stdin=stdin,
            workdir=workdir,
            check_killed=False,
        )
        total_ms = _ms(time.monotonic() - started)
        return self._guest_run(result, key, total_ms, check_gate)

    def background(
        self,
        script: str,
        timeout: float,
        workdir: str | None = None,
        *,
        check_gate: bool = True,
        poll_interval_s: float | None = None,
    ) -> GuestRun:
        interval = self._limits.poll_interval_s if poll_interval_s is None else poll_interval_s
        tag = uuid.uuid4().hex[:12]
        paths = clock.background_paths(tag)
        if workdir:
            script = f"cd {shlex.quote(workdir)} || exit 125\n{script}"
        key = clock.new_key()
        after, stdin = self._key_channel(None, key)
        started = time.monotonic()
        launch = ["/bin/bash", "-c", clock.background_script(script, tag), *after]
        launched = self._exec(None, launch, 60, stdin=stdin)
        if launched.exit_code != 0:
            error = launched.stderr.decode(errors="replace").strip()[:200]
            raise ProviderFailure(f"cannot start a background command in the sandbox: {error}")
        # Each poll waits up to `interval` inside the sandbox and returns once the command ends.
        while polled := self._exec(None, clock.poll_command(tag, interval), interval + 60):
            if polled.exit_code == 0:
                break
            if polled.exit_code == 2:
                raise ProviderFailure("the background command ended without its exit code")
            if time.monotonic() - started > timeout:
                raise ProviderFailure(f"background command still running after {timeout:g} s")
        total_ms = _ms(time.monotonic() - started)
        stdout = self._read(paths["out"])
        stderr = self._read(paths["err"])
        exit_text = self._read(paths["rc"]).strip()
        try:
            exit_code = int(exit_text)
        except ValueError:
            raise BenchmarkError(f"background exit code file holds {exit_text[:40]!r}") from None
        return self._guest_run(ExecResult(exit_code, stdout, stderr), key, total_ms, check_gate)

    def _key_channel(self, sandbox: Sandbox | None, key: str) -> tuple[list[str], bytes | None]:
        """(arguments after the wrapper's script, stdin) that hand the wrapper its call's key.

        On stdin where the adapter has one; where its stdin is a file it would upload inside the
        timed exec, the key is uploaded here, untimed (payload preparation), and its path is the
        wrapper's $0: the wrapper empties the file before the command starts."""
        if not self.provider.stdin_adds_requests:
            return [], clock.key_input(key)
        path = clock.key_file()
        self.upload(path, clock.key_input(key), sandbox=sandbox)
        return [path], None

    def _read(self, path: str) -> bytes:
        result = self._exec(None, ["/bin/cat", "--", path], 60)
        if result.exit_code != 0:
            raise ProviderFailure(f"cannot read {path} back from the sandbox")
        return result.stdout

    def _guest_run(self, result: ExecResult, key: str, total_ms, check_gate) -> GuestRun:
        exit_code, stdout = result.exit_code, result.stdout
        try:
            clean, timing = clock.parse_trailer(result.stderr, key)
        except clock.ExtraTrailer as exc:
            raise BenchmarkError(str(exc)) from None
        self._check_killed(exit_code)
        if timing is None and 0 <= exit_code < 128:
            # The command exited by itself but the wrapper never wrote: the command replaced or
            # ended the wrapper's shell (`exec prog`), which no provider does to a clean exit.
            raise BenchmarkError(
                f"the guest clock trailer is missing although the command exited {exit_code}: "
                "it replaced or ended the clock wrapper's shell (exec), so it cannot be timed"
            )
        if timing is None:
            raise ProviderFailure(
                f"the guest clock trailer is missing (exit code {exit_code}): the sandbox ended "
                "the command before its wrapper finished"
            )
        ok = timing.gate_ok
        if not ok:
            self.evidence(
                EvidenceKind.CLOCK_GATE,
                {"wall_ms": timing.wall_ms, "uptime_ms": timing.uptime_ms, "total_ms": total_ms},
            )
            if check_gate:
                raise ProviderFailure(
                    f"stepped clock: wall span {timing.wall_ms:.3f} ms, uptime span "
                    f"{timing.uptime_ms:.3f} ms (tolerance {clock.GATE_TOLERANCE_MS:g} ms)"
                )
        return GuestRun(
            exit_code=exit_code,
            stdout=stdout,
            stderr=clean,
            total_ms=total_ms,
            runtime_ms=timing.wall_ms if ok else None,
            wall_ms=timing.wall_ms,
            uptime_ms=timing.uptime_ms,
            gate_ok=ok,
        )

    def exec(self, argv: list[str], timeout: float, stdin: bytes | None = None):
        return self._exec(None, argv, timeout, stdin=stdin)

    def _exec(self, sandbox, argv, timeout, stdin=None, workdir=None, *, check_killed=True):
        sandbox = sandbox or self.sandbox
        try:
            result = self.provider.exec(
                sandbox, argv, timeout=timeout, stdin=stdin, workdir=workdir
            )
        except ExecTimeout as exc:
            raise ProviderFailure(f"a step hit its {timeout:g} s time limit: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - any adapter error is the provider's
            raise adapter_failure("exec", exc) from None
        if check_killed:
            self._check_killed(result.exit_code)
        return result

    def _check_killed(self, exit_code: int) -> None:
        """A command ended by a signal the benchmark did not send: the provider's failure."""
        why = fault.killed_from_outside(exit_code, self.definition.sends_signals)
        if why:
            self.evidence(EvidenceKind.KILLED_BY_SIGNAL, {"exit_code": exit_code, "cause": why})
            raise ProviderFailure(why)

    def upload(
        self, path: str, data: bytes, name: str | None = None, *, sandbox: Sandbox | None = None
    ) -> float:
        """Upload to `sandbox` (the trial's own by default), timed from adapter entry as metric
        `name` when given."""
        target = sandbox or self.sandbox
        return self._transfer("upload", name, lambda: self.provider.upload(target, path, data))

    def download(self, path: str, name: str | None = None) -> bytes:
        return self._transfer("download", name, lambda: self.provider.download(self.sandbox, path))

    def _transfer(self, operation, name, call):
        started = time.monotonic()
        try:
            value = call()
        except Exception as exc:  # noqa: BLE001 - any adapter error is the provider's
            raise adapter_failure(operation, exc) from None
        if name:
            self.record(name, _ms(time.monotonic() - started), clock=Clock.JOB_HOST)
        return value

    def record(
        self,
        name,
        value,
        *,
        kind=MeasurementKind.METRIC,
        unit="ms",
        clock=Clock.GUEST,
        gate=ClockGate.NOT_APPLICABLE,
    ):
        with self._lock:
            if self._closed:
                return
            if any(m.name == name and m.kind == kind for m in self._result.measurements):
                raise BenchmarkError(f"measurement {kind} {name!r} recorded twice")
            # The trial's row stores values as JSON, which has no NaN or infinity; the raw-data
            # format bounds every value so that no statistic overflows.
            if value is not None and not math.isfinite(value):
                raise BenchmarkError(f"measurement {kind} {name!r} is {value}, not a finite number")
            if value is not None and abs(value) > MAX_VALUE:
                raise BenchmarkError(
                    f"measurement {kind} {name!r} is {value:g}, above the largest value stored "
                    f"({MAX_VALUE:g})"
                )
            self._result.measurements.append(
                MeasurementRecord(name, value, kind=kind, unit=unit, clock=clock, gate=gate)
            )

    def requests(self, records: list[dict]) -> None:
        with self._lock:
            if not self._closed:
                self._result.requests = list(records)

    def evidence(self, kind: EvidenceKind, data: dict) -> None:
        with self._lock:
            if not self._closed:
                self._result.evidence.append(EvidenceRecord(kind, data))

    def close(self) -> None:
        """Stop accepting records: a procedure cut short may still be running in its thread."""
        with self._lock:
            self._closed = True
        self.ledger.close()


def run_trial(
    provider,
    definition: BenchmarkDefinition,
    unit: UnitDefinition,
    procedure: Callable[[TrialContext], None],
    *,
    label: str,
    lifetime_s: float | None = None,
    pricing: dict | None = None,
    limits: Limits = Limits(),
    space: Callable[[], None] | None = None,
) -> TrialResult:
    """Run one trial of `procedure` on `provider`; `space` is the chain's create spacer."""
    result = TrialResult(started_at=datetime.now(UTC))
    # A unit may declare its own size (a Terminal-Bench task's [environment]).
    spec = SandboxSpec(
        cpus=unit.definition.get("cpus", definition.cpus),
        memory_mib=unit.definition.get("memory_mib", definition.memory_mib),
        label=label,
        lifetime_s=lifetime_s or definition.lifetime_s,
        image=definition.image,
        forks="fork" in definition.required_capabilities,
    )
    ctx = LifecycleContext(provider, definition, unit, result, spec, limits, space)
    sampler = HostLoadSampler()
    sampler.start()
    try:
        _run_steps(ctx, definition, procedure, result)
    except TrialOutcome as exc:
        result.fail(exc.outcome, exc.owner, exc.cause)
    except Exception as exc:  # noqa: BLE001 - a defect in the runner must not kill the chain
        _fail_on_runner_error(result, exc)
    finally:
        ctx.close()
        clean_up(ctx.ledger, provider, definition.destroy_timeout_s, result, limits)
        result.host_load = sampler.stop()
        result.ended_at = datetime.now(UTC)
    result.cost_usd = _cost(ctx, pricing, label, result)
    if result.outcome == Outcome.SUCCESS and not any(
        m.name == definition.metric and m.kind == MeasurementKind.METRIC
        for m in result.measurements
    ):
        result.fail(
            Outcome.BENCHMARK_ERROR,
            Owner.BENCHMARK,
            f"the procedure recorded no {definition.metric!r}",
        )
    if result.outcome != Outcome.SUCCESS and result.cost_usd:
        result.evidence.append(EvidenceRecord(EvidenceKind.BILLED_COST, {"usd": result.cost_usd}))
    return result


def _run_steps(ctx: LifecycleContext, definition, procedure, result: TrialResult) -> None:
    """The trial's layer, the definition's untimed preparation, its own sandbox with the
    readiness check, and the procedure, with the placement probed before the procedure (or
    after it, under timed readiness)."""
    layer = layers.prepare(ctx) if definition.unique_layer else None
    if definition.before_create is not None:
        definition.before_create(ctx)
    if definition.own_sandbox:
        _create_and_check(ctx, definition)
    if definition.own_sandbox and not definition.timed_readiness:
        result.placement = probe_placement(ctx)
    _run_procedure(ctx, procedure, definition.procedure_timeout_s, result)
    if definition.own_sandbox and definition.timed_readiness and not result.cut_short:
        result.placement = probe_placement(ctx)
    if layer is not None:
        result.placement["unique_layer"] = layer


def _fail_on_runner_error(result: TrialResult, exc: Exception) -> None:
    """An exception from the runner itself, called while it is handled: the job host's when it
    ran out of a resource, else a defect in our code; its traceback is kept."""
    result.evidence.append(
        EvidenceRecord(EvidenceKind.TRACEBACK, {"trace": traceback.format_exc(limit=8)})
    )
    host = fault.host_failure(exc)
    if host:
        cause = f"{host}: {type(exc).__name__}: {exc}"
        result.fail(Outcome.BENCHMARK_ERROR, Owner.ENVIRONMENT, cause)
    else:
        cause = f"the runner raised {type(exc).__name__}: {exc}"
        result.fail(Outcome.BENCHMARK_ERROR, Owner.BENCHMARK, cause)


def _create_and_check(ctx: LifecycleContext, definition: BenchmarkDefinition) -> None:
    ctx.sandbox, ctx.create_ms = ctx.create_sandbox(ctx.spec)
    if not definition.timed_readiness:
        ctx.readiness = ctx.check_readiness(ctx.sandbox)


def _run_procedure(ctx, procedure, timeout_s: float, result: TrialResult) -> None:
    """Run the procedure in a thread, so an overrun cuts the trial short instead of hanging."""
    outcome: dict = {}

    def target():
        try:
            procedure(ctx)
        except BaseException as exc:  # noqa: B036, BLE001 - carried to the caller's thread
            outcome["error"] = exc
            outcome["trace"] = traceback.format_exc(limit=8)

    thread = threading.Thread(target=target, name="trial-procedure", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        result.cut_short = True
        raise CutShort(f"the procedure overran its {timeout_s:g} s limit")
    error = outcome.get("error")
    if error is None:
        return
    if isinstance(error, TrialOutcome):
        raise error
    if isinstance(error, ProviderError):
        raise adapter_failure("provider", error)
    ctx.evidence(EvidenceKind.TRACEBACK, {"trace": outcome["trace"]})
    host = fault.host_failure(error)
    if host:
        raise JobHostFailure(f"{host}: {type(error).__name__}: {error}")
    raise BenchmarkError(f"the procedure raised {type(error).__name__}: {error}")


def _cost(
    ctx: LifecycleContext, pricing: dict | None, label: str, result: TrialResult
) -> float | None:
    """The trial's cost at `pricing` (None without one). A cost no price can be fails the trial,
    naming the provider and the trial's batch, and is not stored."""
    if not pricing:
        return None
    try:
        cost = ctx.ledger.cost_usd(pricing, time.time())
        refused = refused_cost(cost) if cost is not None else ""
    except (ArithmeticError, TypeError, ValueError) as exc:  # e.g. a billing increment of 1e-320
        cost, refused = None, f"no cost at all ({type(exc).__name__}: {exc})"
    if not refused:
        return cost
    provider = getattr(ctx.provider, "slug", "") or type(ctx.provider).__name__
    result.fail(
        Outcome.BENCHMARK_ERROR,
        Owner.BENCHMARK,
        f"cost refused and not stored: {provider}'s pricing gives this trial (batch {label}) "
        f"{refused}",
    )
    return None


def _ms(seconds: float) -> float:
    return seconds * 1000.0
