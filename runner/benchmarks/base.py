"""What a benchmark is to the runner: a definition, its units, and a timed procedure.

One module per benchmark in runner/benchmarks/, or one module per family of benchmarks built from
one parameterized definition (CPU single and all cores, say). Each benchmark (the module, or an
object of the family's module) exposes:

    DEFINITION: BenchmarkDefinition
    def units() -> list[UnitDefinition]
    def run(ctx: TrialContext) -> None      # the timed procedure of one trial

`run` records measurements through the context and signals a non-success outcome by raising one
of the TrialOutcome exceptions below. Anything else it raises is a benchmark error (our defect).
The lifecycle (runner/lifecycle.py) owns create, readiness, cleanup and the outcome classes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from runner.outcomes import (
    Clock,
    ClockGate,
    Direction,
    EvidenceKind,
    MeasurementKind,
    Outcome,
    Owner,
    Section,
)
from stats.labels import DEFAULT_RANKING_FLOOR


class TrialOutcome(Exception):
    """Ends a trial with a non-success outcome; `owner` says whose fault it is."""

    outcome: Outcome  # every subclass names its own
    owner: Owner = Owner.NONE

    def __init__(self, cause: str):
        super().__init__(cause)
        self.cause = cause


class ProviderFailure(TrialOutcome):
    outcome, owner = Outcome.PROVIDER_FAILURE, Owner.PROVIDER


class BenchmarkError(TrialOutcome):
    """Our script, adapter binding or core failed: stops the unit on this provider for the run."""

    outcome, owner = Outcome.BENCHMARK_ERROR, Owner.BENCHMARK


class Excluded(TrialOutcome):
    """A deterministic trace diverged here ("does not replay here"); not the provider's fault."""

    outcome, owner = Outcome.EXCLUDED, Owner.TRACE


class Missed(TrialOutcome):
    """A pre-test environment check skipped the trial before the measured procedure ran."""

    outcome, owner = Outcome.MISSED, Owner.ENVIRONMENT


class Reading(Protocol):
    """One reading a probe benchmark declares (isolation_probes.Probe), as its page shows it."""

    @property
    def name(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def unit(self) -> str: ...
    @property
    def expected(self) -> str: ...
    @property
    def meaning(self) -> str: ...


@dataclass(frozen=True)
class BenchmarkDefinition:
    slug: str
    title: str
    section: Section
    metric: str  # name of the main measurement
    unit: str  # ms, MiB/s, ops/s, ...
    direction: Direction
    clock: Clock  # what timed the main measurement
    version: str = "1"
    description: str = ""
    statistic: str = "median"  # median | pooled_median
    cpus: int = 2
    memory_mib: int = 4096
    trials_per_unit: int = 20
    ranking_floor: int = DEFAULT_RANKING_FLOOR
    # A workload whose units vary from machine to machine (imported tasks) sets the share of the
    # successes a run requests that ranks it: each run's floor is then that share of the declared
    # trials per unit times the run's own units, counted across them (the manifest's `run_floor`),
    # rather than `ranking_floor`, which counts only the units shipped with boxbench.
    floor_share: str = ""
    required_capabilities: tuple[str, ...] = ()
    stage_names: tuple[str, ...] = ()
    charted: bool = True
    steps_include_create_or_build: bool = False
    # Said on every row of the benchmark's CSV downloads (a last column, `note`), as its page and
    # the methodology say it: a workload on boxbench's own units says it is not the reference set.
    download_note: str = ""
    # A probe benchmark's catalog: the readings its page shows, one row per reading and provider.
    readings: tuple[Reading, ...] = ()
    # Create from the pinned base plus a layer unique to the trial, built untimed (layers.py).
    unique_layer: bool = False
    # The first timed command is sent as soon as create returns: no untimed readiness check.
    timed_readiness: bool = False
    # Untimed, before the trial's create: may point the trial's spec at an image made for its
    # unit (`ctx.use_image`), as a task's environment built from its Dockerfile.
    before_create: Callable[[Any], None] | None = None
    # Step time limits in seconds, above the slowest normal time seen on any provider.
    create_timeout_s: float = 600.0
    procedure_timeout_s: float = 600.0
    destroy_timeout_s: float = 300.0
    lifetime_s: float = 1500.0
    image: str = ""  # "" is the standard image
    # Trials run in parallel per provider (equal for every provider); None: the job host's
    # default (BOXBENCH_CONCURRENCY). Capped by BOXBENCH_JOB_HOST_CAP; `--concurrency` overrides.
    parallel_trials: int | None = None
    sandboxes_per_trial: int = 1  # at most at once; x parallel_trials must fit the account limit
    # False: the lifecycle makes no sandbox of the trial's own; the procedure makes them all
    # (a burst times its own creates, so one made before it would only add load).
    own_sandbox: bool = True
    # A trial's sandboxes interact (a burst): its trials run one at a time whatever the run's
    # concurrency, and a failed trial is re-run whole, never topped up sandbox by sandbox.
    interacting: bool = False
    # Signals the procedure itself sends to the commands it runs (signal numbers). Any other
    # external signal ending a command is the provider's failure (runner/fault.py).
    sends_signals: tuple[int, ...] = ()


@dataclass(frozen=True)
class UnitDefinition:
    slug: str
    title: str = ""
    definition: dict = field(default_factory=dict)
    digest: str = ""


class Benchmark(Protocol):
    """What the registry (runner/benchmarks/__init__.py) holds: a module or an object."""

    DEFINITION: BenchmarkDefinition

    def units(self) -> list[UnitDefinition]: ...

    def run(self, ctx: TrialContext) -> None: ...


@dataclass
class GuestRun:
    """One command timed by the guest clock wrapper (runner/clock.py)."""

    exit_code: int
    stdout: bytes
    stderr: bytes  # with the __SANDBOX_CLOCK trailer removed
    total_ms: float  # job-host clock, the caller's wait
    runtime_ms: float | None  # guest wall-clock span; None when the clock gate failed
    wall_ms: float
    uptime_ms: float
    gate_ok: bool

    @property
    def latency_ms(self) -> float | None:
        return None if self.runtime_ms is None else self.total_ms - self.runtime_ms


class TrialContext(ABC):
    """What a benchmark's procedure sees of one trial. Implemented by runner/lifecycle.py."""

    provider: Any  # runner.providers.base.Provider
    sandbox: Any  # runner.providers.base.Sandbox
    definition: BenchmarkDefinition
    unit: UnitDefinition

    @abstractmethod
    def timed(self, name: str, call: Callable[[], Any]) -> Any:
        """Call `call`, timing it on the job host's monotonic clock as metric `name` (ms)."""

    @abstractmethod
    def guest(
        self,
        command: str,
        timeout: float,
        workdir: str | None = None,
        *,
        check_gate: bool = True,
        sandbox: Any = None,
    ) -> GuestRun:
        """Run a bash command in the sandbox (default: the trial's own) inside the guest clock
        wrapper.

        A failed clock gate raises ProviderFailure (stepped clock) unless the caller asked
        otherwise; transport errors raise ProviderFailure.
        """

    @abstractmethod
    def background(
        self, script: str, timeout: float, workdir: str | None = None, *, check_gate: bool = True
    ) -> GuestRun:
        """Run a long script in the background and poll it every 10 s until it exits.

        `check_gate=False` keeps a failed clock gate over the whole script as evidence instead of
        raising, for scripts whose measured spans are gated inside them (trace replay).
        """

    @abstractmethod
    def exec(self, argv: list[str], timeout: float, stdin: bytes | None = None):
        """An untimed command (setup, probes, verification)."""

    @abstractmethod
    def record(
        self,
        name: str,
        value: float | None,
        *,
        kind: MeasurementKind = MeasurementKind.METRIC,
        unit: str = "ms",
        clock: Clock = Clock.GUEST,
        gate: ClockGate = ClockGate.NOT_APPLICABLE,
    ) -> None:
        """Store one measurement of this trial."""

    @abstractmethod
    def requests(self, records: list[dict]) -> None:
        """Keep the trial's per-request records (a burst's), published with its raw data."""

    @abstractmethod
    def evidence(self, kind: EvidenceKind, data: dict) -> None:
        """Keep a private fact about this trial (not published)."""

    @abstractmethod
    def new_sandbox(self, spec_overrides: dict | None = None):
        """A further sandbox for multi-sandbox benchmarks; the lifecycle cleans it up."""

    @abstractmethod
    def create_here(self, name: str) -> tuple[Any, float, float]:
        """A further sandbox of the trial's spec, created in the calling thread: no watchdog
        thread is born between the caller's send and adapter entry, so a caller that already
        runs on a pre-started thread sends when it means to (the caller bounds the wait).
        Returns (sandbox, adapter entry, return), monotonic; the lifecycle cleans it up."""

    @abstractmethod
    def snapshot(self, sandbox: Any, name: str | None = "snapshot_ms") -> tuple[str, float]:
        """Snapshot `sandbox`, timed from adapter entry and recorded as metric `name`: (id, ms).
        The lifecycle deletes the snapshot and confirms it gone."""

    @abstractmethod
    def restore(
        self, snapshot_id: str, name: str = "restore", *, spaced: bool = False
    ) -> tuple[Any, float]:
        """A sandbox restored from a snapshot, timed like create (create_started and
        create_returned stamp it), with no readiness check: (sandbox, ms). `spaced`: the caller
        has already waited its turn (`space_create`) outside its own timed span."""

    @abstractmethod
    def space_create(self) -> None:
        """Wait, untimed, until the provider's documented create rate allows another create.
        Every create, restore and fork waits its turn itself; a procedure whose timed span
        holds a create calls this before its span starts and passes `spaced=True`."""

    @abstractmethod
    def fork(self, sandbox: Any, name: str = "fork") -> tuple[Any, float]:
        """A copy of `sandbox`, timed like create, with no readiness check: (sandbox, ms)."""

    # What the lifecycle measured of the trial's own create (job host's monotonic clock).
    create_ms: float | None
    create_started: float | None
    create_returned: float | None

    @abstractmethod
    def check_readiness(self, sandbox: Any) -> dict:
        """The untimed readiness check on `sandbox`, its attempts kept as evidence."""

    @abstractmethod
    def destroy_sandbox(self, sandbox: Any = None, name: str | None = None) -> float:
        """Destroy a sandbox now, timed from adapter entry (ms); recorded as `name` when given."""

    @abstractmethod
    def upload(self, path: str, data: bytes, name: str | None = None) -> float:
        """Upload a file, timed from adapter entry; recorded as metric `name` when given."""

    @abstractmethod
    def download(self, path: str, name: str | None = None) -> bytes:
        """Download a file, timed from adapter entry; recorded as metric `name` when given."""
