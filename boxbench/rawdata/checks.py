"""Checks of the raw-data format that span fields or lines; no database.

The schema (boxbench/rawdata/schema.py) has checked each field on its own. Here: time range and
order, references to the header, execution order (which makes seq unique), replacements, NUL
characters, control, format and bidi characters (characters.py), duplicates within the header,
what a public file may hold, counts lines and reliability lines.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime

import msgspec

from boxbench.rawdata import characters
from boxbench.rawdata.errors import FieldError
from boxbench.rawdata.schema import (
    FULL,
    PUBLIC,
    SCHEMA_VERSION,
    CountsLine,
    Header,
    ReliabilityLine,
    TrialLine,
)
from stats.reliability import NOT_COUNTED_BENCHMARKS

# What both SQLite and PostgreSQL store and Python reads back: years 1 to 9999, in UTC.
EARLIEST = datetime(1, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)


def check_moment(name: str, value: datetime | None):
    if value is not None and not EARLIEST <= value <= LATEST:
        raise FieldError(name, f"{value.isoformat()} is outside years 1 to 9999 (UTC)")


def check_window(prefix: str, started: datetime | None, ended: datetime | None):
    check_moment(f"{prefix}started_at", started)
    check_moment(f"{prefix}ended_at", ended)
    if started is not None and ended is not None and ended < started:
        raise FieldError(f"{prefix}ended_at", "is before started_at")


def find_nul(value, path: str) -> str | None:
    """The path of the first string (or object key) under `value` holding a NUL character."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, msgspec.Struct):
        items = ((name, getattr(value, name)) for name in value.__struct_fields__)
        return _first_nul(items, path)
    if isinstance(value, dict):
        for key in value:
            if "\x00" in key:
                return f"{path} (a key)"
        return _first_nul(((str(k), v) for k, v in value.items()), path)
    if isinstance(value, list):
        return _first_nul(((f"[{i}]", v) for i, v in enumerate(value)), path, joiner="")
    return None


def _first_nul(items, path: str, joiner: str = ".") -> str | None:
    for name, item in items:
        found = find_nul(item, f"{path}{joiner}{name}" if path else name)
        if found:
            return found
    return None


def check_no_nul(raw: bytes, decoded):
    # JSON can only carry NUL escaped; the byte search is cheap, the walk names the field.
    if b"\\u0000" in raw:
        found = find_nul(decoded, "")
        if found:
            raise FieldError(found, "contains a NUL character")


def check_characters(line):
    """Refuse control, format and bidi characters in the line's names and texts."""
    found = characters.find_refused(line)
    if found:
        raise FieldError(found[0], characters.describe(found[1]))


def check_header(header: Header):
    check_characters(header)
    check_window("run.", header.run.started_at, header.run.ended_at)
    check_moment("run.created_at", header.run.created_at)
    _unique("providers", [(p.slug,) for p in header.providers], "slug")
    _unique("benchmarks", [(b.slug, b.version) for b in header.benchmarks], "slug")
    for i, benchmark in enumerate(header.benchmarks):
        _unique(f"benchmarks[{i}].units", [(u.slug,) for u in benchmark.units], "slug")


def _unique(path: str, keys: list[tuple], name: str):
    seen = set()
    for i, key in enumerate(keys):
        if key in seen:
            shown = " version ".join(repr(part) for part in key)
            raise FieldError(f"{path}[{i}].{name}", f"{shown} appears twice")
        seen.add(key)


@dataclass
class BenchmarkRef:
    """A header benchmark as the trial lines refer to it; ids are the database's."""

    id: int
    units: dict[str, int]
    metrics: dict[str, tuple[str, str]]  # name → (unit, clock)
    stages: dict[str, tuple[str, str]]


@dataclass
class TrialChecks:
    """The checks of each trial line against the header and the lines before it."""

    benchmarks: dict[tuple[str, str], BenchmarkRef]
    providers: dict[str, int]
    # The run's window: a trial's own lies inside it (a trial of a run that never started has
    # no times; one of a run still going has no end bound but the run's start).
    run_started: datetime | None = None
    run_ended: datetime | None = None
    form: str = FULL
    version: int = SCHEMA_VERSION  # counts lines from 3, reliability lines from 6
    last_seq: int = 0
    # Set by the first counts or reliability line: no trial line follows them.
    trials_ended: bool = False
    # (benchmark, version, unit, provider) of each counts line read so far: once per file.
    counted: set = field(default_factory=set)
    # (benchmark, provider) of every trial and counts line: each provider of a counted
    # benchmark needs a reliability line in a file that has them.
    used: set = field(default_factory=set)
    # Providers of the reliability lines read so far: once per file.
    reliable: set = field(default_factory=set)
    # Trials that are not a success, the only ones a later trial may replace. Failures are few,
    # so this stays small where a set of every trial id would grow with the file.
    replaceable: set = field(default_factory=set)

    def check(self, trial: TrialLine) -> tuple[BenchmarkRef, int, int]:
        """(benchmark, unit id, provider id) of a trial line that passes every check.

        One combined test on the common path (about a microsecond a line); anything unusual
        goes through `_explain`, which names the problem or lets a valid rarity pass."""
        benchmark = self.benchmarks.get((trial.benchmark, trial.benchmark_version))
        unit = None if benchmark is None else benchmark.units.get(trial.unit)
        provider = self.providers.get(trial.provider)
        started, ended = trial.started_at, trial.ended_at
        if (
            unit is None
            or provider is None
            or self.trials_ended
            or (trial.outcome != "success" and self.form == PUBLIC)
            or trial.seq <= self.last_seq
            or trial.replaces is not None
            or trial.clock_gates is not None
            or (started is not None and not self._inside(started))
            or (
                ended is not None
                and not (self._inside(ended) and (started is None or ended >= started))
            )
            or not trial.metrics.keys() <= benchmark.metrics.keys()
            or not trial.stages.keys() <= benchmark.stages.keys()
            or not (trial.cause.isprintable() and trial.batch.isprintable())
            or not trial.job_host.isprintable()
        ):
            self._explain(trial)
        self.last_seq = trial.seq
        self.used.add((trial.benchmark, trial.provider))
        if trial.outcome != "success":
            self.replaceable.add(trial.trial)
        return benchmark, unit, provider

    def _explain(self, trial: TrialLine):
        check_characters(trial)
        if self.trials_ended:
            raise FieldError("type", "trial lines come before the counts and reliability lines")
        if trial.outcome != "success" and self.form == PUBLIC:
            raise FieldError(
                "outcome",
                f"{trial.outcome!r} in a public file, which holds successful trials only (it "
                "counts the others in its counts lines)",
            )
        if trial.replaces is not None and self.form == PUBLIC:
            raise FieldError("replaces", "a public file carries no replacement links")
        self._check_cell(trial)
        benchmark = self.benchmarks[(trial.benchmark, trial.benchmark_version)]
        if trial.seq <= self.last_seq:
            raise FieldError(
                "seq",
                f"{trial.seq} is not greater than the previous trial's {self.last_seq} (trials "
                "are in execution order, and seq is unique)",
            )
        check_window("", trial.started_at, trial.ended_at)
        self._check_run_window(trial)
        self._check_names(trial, benchmark)
        if trial.replaces is not None:
            self._check_replacement(trial)

    def _inside(self, moment: datetime) -> bool:
        # A run that never started holds no timed trial.
        started = self.run_started
        return started is not None and started <= moment <= (self.run_ended or LATEST)

    def _check_run_window(self, trial: TrialLine):
        for name in ("started_at", "ended_at"):
            moment = getattr(trial, name)
            if moment is None or self._inside(moment):
                continue
            if self.run_started is None:
                raise FieldError(name, "is set, but the run has no started_at")
            if moment < self.run_started:
                raise FieldError(
                    name,
                    f"{moment.isoformat()} is before the run's started_at "
                    f"{self.run_started.isoformat()}",
                )
            raise FieldError(
                name,
                f"{moment.isoformat()} is after the run's ended_at {self.run_ended.isoformat()}",
            )

    def _check_cell(self, line: TrialLine | CountsLine) -> tuple[BenchmarkRef, int, int]:
        benchmark = self.benchmarks.get((line.benchmark, line.benchmark_version))
        if benchmark is None:
            raise FieldError(
                "benchmark",
                f"{line.benchmark!r} version {line.benchmark_version!r} is not in the run header",
            )
        if line.unit not in benchmark.units:
            raise FieldError(
                "unit", f"{line.unit!r} is not a unit of {line.benchmark!r} in the run header"
            )
        if line.provider not in self.providers:
            raise FieldError("provider", f"{line.provider!r} is not in the run header")
        return benchmark, benchmark.units[line.unit], self.providers[line.provider]

    def count(self, line: CountsLine) -> tuple[BenchmarkRef, int, int]:
        """(benchmark, unit id, provider id) of a counts line that passes every check."""
        if self.version < 3:
            raise FieldError("type", "counts lines are a version-3 line; this file is older")
        if self.reliable:
            raise FieldError("type", "counts lines come before the reliability lines")
        cell = self._check_cell(line)
        key = (line.benchmark, line.benchmark_version, line.unit, line.provider)
        if key in self.counted:
            raise FieldError(
                "provider", "a second counts line for this benchmark, unit and provider"
            )
        if not line.outcomes:
            raise FieldError("outcomes", "counts no outcome")
        failures = line.outcomes.get("provider_failure", 0)
        if line.unreplaced_provider_failures > failures:
            raise FieldError(
                "unreplaced_provider_failures",
                f"{line.unreplaced_provider_failures} is more than the {failures} provider "
                "failures counted",
            )
        self.counted.add(key)
        self.used.add((line.benchmark, line.provider))
        self.trials_ended = True
        return cell

    def reliability(self, line: ReliabilityLine) -> None:
        """Check a reliability line: one per provider of the header, and no operation with more
        failed attempts than attempts."""
        if self.version < 6:
            raise FieldError("type", "reliability lines are a version-6 line; this file is older")
        if line.provider not in self.providers:
            raise FieldError("provider", f"{line.provider!r} is not in the run header")
        if line.provider in self.reliable:
            raise FieldError("provider", "a second reliability line for this provider")
        for operation, entry in line.operations.items():
            for owner, by_class in entry.failures.items():
                if not by_class:
                    raise FieldError(
                        f"operations.{operation}.failures.{owner}", "counts no cause class"
                    )
            failed = sum(n for by_class in entry.failures.values() for n in by_class.values())
            if failed > entry.attempts:
                raise FieldError(
                    f"operations.{operation}.failures",
                    f"{failed} failed attempts are more than the {entry.attempts} attempts",
                )
        self.reliable.add(line.provider)
        self.trials_ended = True

    def unreliable_provider(self) -> str | None:
        """A provider with trial or counts lines of a benchmark the Reliability page counts but
        no reliability line, in a file of version 6 or later (which always has them)."""
        if self.version < 6:
            return None
        used = {p for b, p in self.used if b not in NOT_COUNTED_BENCHMARKS}
        return min(used - self.reliable, default=None)

    def _check_replacement(self, trial: TrialLine):
        if trial.replaces == trial.trial:
            raise FieldError("replaces", "a trial cannot replace itself")
        if trial.replaces not in self.replaceable:
            raise FieldError(
                "replaces",
                f"{trial.replaces} is not an earlier trial of this file that failed",
            )
        # Replaced once: the runner never refills a trial that already has a replacement.
        self.replaceable.discard(trial.replaces)

    @staticmethod
    def _check_names(trial: TrialLine, benchmark: BenchmarkRef):
        for name in trial.metrics:
            if name not in benchmark.metrics:
                raise FieldError("metrics", f"{name!r} is not declared in the header")
        for name in trial.stages:
            if name not in benchmark.stages:
                raise FieldError("stages", f"{name!r} is not declared in the header")
        gates = trial.clock_gates
        if gates is not None:
            for group, names in (("metrics", trial.metrics), ("stages", trial.stages)):
                for name in getattr(gates, group):
                    if name not in names:
                        raise FieldError(
                            f"clock_gates.{group}", f"{name!r} is not a measurement of this trial"
                        )
