"""`bench import`: read a raw-data file back into the database, all of it or nothing.

Every line is decoded into the typed schema and checked (boxbench/rawdata/checks.py) before its
rows are written; the whole file is one transaction, so the first refusal leaves nothing behind.
A file of version 2 or later must end in its trailer, whose count and digest prove the file
whole. A version-3 public file holds successful trials only; its counts lines, stored as
UnsuccessfulCount rows, stand for the other attempts. From version 6 its reliability lines, stored
as the run's RunReliability, place those attempts' failures on their operations.
"""

import gc
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
from django.db import DatabaseError, transaction

from boxbench.definitions import DefinitionConflict, ensure_benchmark, ensure_provider, ensure_unit
from boxbench.leaderboard.reliability import FAILED_OUTCOMES
from boxbench.models import (
    Benchmark,
    MeasurementKind,
    MeasurementName,
    Provider,
    Run,
    RunReliability,
    RunStatus,
    RunTransition,
    Unit,
    UnsuccessfulCount,
)
from boxbench.rawdata import checks
from boxbench.rawdata.errors import (
    FieldError,
    RawDataError,
    at,
    from_validation,
    lowercase_first,
    name_keys,
)
from boxbench.rawdata.reader import Lines, LineTooLong
from boxbench.rawdata.schema import (
    FULL,
    MAX_HEADER_BYTES,
    MAX_LINE_BYTES,
    READABLE_VERSIONS,
    CountsLine,
    Header,
    ReliabilityLine,
    Trailer,
    TrialLine,
)
from boxbench.rawdata.writers import RowError, writer_for
from runner.labels import LABEL_DIGITS
from runner.manifest import Manifest, ManifestError

METRIC, STAGE = MeasurementKind.METRIC.value, MeasurementKind.STAGE.value

BENCHMARK_FIELDS = (
    "slug",
    "version",
    "title",
    "description",
    "section",
    "metric",
    "unit",
    "direction",
    "statistic",
    "clock",
    "cpus",
    "memory_mib",
    "trials_per_unit",
    "ranking_floor",
    "required_capabilities",
    "stage_names",
    "charted",
    "steps_include_create_or_build",
)
PROVIDER_FIELDS = (
    "slug",
    "name",
    "adapter",
    "region",
    "region_marker",
    "region_note",
    "declaration",
    "declaration_digest",
    "pricing",
    "pricing_digest",
)
UNIT_FIELDS = ("slug", "title", "definition", "digest")

V1_WARNING = (
    "{source}: schema version 1 has no trailer, so a file cut at a line boundary cannot be "
    "detected; export the run again to get a file with a trailer"
)
UNPLACED_WARNING = (
    "{source}: schema version {version} has no reliability lines, so the {failures} failed "
    "attempts its counts lines hold are on the Reliability page without their operation or "
    "cause class; a version-6 export of the run carries them"
)


@dataclass
class ImportResult:
    run: Run
    trials: int
    measurements: int
    warnings: list[str] = field(default_factory=list)
    form: str = "full"
    counted: int = 0  # unsuccessful attempts the file holds as counts, not as trial lines


class _Peek(msgspec.Struct):
    type: Any = None
    schema_version: Any = None


_header_decoder = msgspec.json.Decoder(Header)
_peek_decoder = msgspec.json.Decoder(_Peek)
_line_decoder = msgspec.json.Decoder(TrialLine | CountsLine | ReliabilityLine | Trailer)


def import_jsonl(path: str | Path) -> ImportResult:
    """Import a run from a JSON Lines file; all of it or nothing."""
    source = str(path)
    try:
        handle = open(path, "rb")  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise RawDataError(f"{source}: cannot be read ({exc.strerror})") from None
    # Batches of rows would set off the cyclic garbage collector again and again, for nothing:
    # they hold no cycles, and reference counting frees them.
    collecting = gc.isenabled()
    gc.disable()
    with handle:
        try:
            with transaction.atomic():
                return _Import(source, handle).run()
        except LineTooLong as exc:
            problem = f"longer than {exc.limit:,} bytes, the format's limit"
            raise at(source, exc.number, problem) from None
        except RowError as exc:
            raise at(source, exc.number, exc.error) from None
        except DatabaseError as exc:
            # Not tied to a line (the checks above should leave none): still no traceback.
            raise RawDataError(f"{source}: the database refused the file: {exc}") from None
        except OSError as exc:
            raise RawDataError(f"{source}: cannot be read ({exc.strerror})") from None
        finally:
            if collecting:
                gc.enable()


def decode(source: str, number: int, raw: bytes, decoder):
    """A line decoded into the schema, or RawDataError naming the file, line and field."""
    try:
        value = decoder.decode(raw)
    except msgspec.ValidationError as exc:
        problem = from_validation(exc)
        if isinstance(problem, FieldError):
            problem = name_keys(problem, raw, decoder)
        if isinstance(problem, FieldError) and problem.field == "type":
            problem = FieldError(
                "type",
                "every line after the header is a trial, counts, reliability or trailer line",
            )
        raise at(source, number, problem) from None
    except msgspec.DecodeError as exc:
        raise at(source, number, f"not valid JSON ({lowercase_first(str(exc))})") from None
    except RecursionError:
        raise at(source, number, "not valid here: nested too deeply") from None
    try:
        checks.check_no_nul(raw, value)
    except FieldError as exc:
        raise at(source, number, exc) from None
    return value


class _Import:
    def __init__(self, source: str, handle):
        self.source = source
        self.lines = Lines(handle, MAX_HEADER_BYTES, MAX_LINE_BYTES)
        self.warnings: list[str] = []

    def run(self) -> ImportResult:
        numbered = iter(self.lines)
        number, raw = next(((n, r) for n, r in numbered if r.strip()), (0, b""))
        if not number:
            raise RawDataError(
                f"{self.source}: the file is empty; its first line must be the run header"
            )
        header, version = self._header(number, raw)
        try:
            run, trial_checks, references = _store_definitions(self.source, header)
        except FieldError as exc:
            raise at(self.source, number, exc) from None
        trial_checks.form = header.form
        trial_checks.version = version
        counts: list[UnsuccessfulCount] = []
        reliability: dict[str, dict] = {}
        writer = writer_for(run.id, references)
        try:
            trailer, trailer_number = None, 0
            decode_line, nul = _line_decoder.decode, b"\\u0000"
            for number, raw in numbered:
                if trailer is not None:
                    raise at(self.source, number, "nothing may follow the trailer line")
                if not raw or raw.isspace():
                    continue
                try:
                    line = decode_line(raw)
                    if nul in raw:
                        raise ValueError
                except (msgspec.DecodeError, RecursionError, ValueError):
                    # The slow path names what is wrong (or passes a NUL-free line with "\\u0000").
                    line = decode(self.source, number, raw, _line_decoder)
                if type(line) is Trailer:
                    trailer, trailer_number = line, number
                    continue
                if type(line) is CountsLine:
                    counts.append(self._counts(run, trial_checks, number, line))
                    continue
                if type(line) is ReliabilityLine:
                    try:
                        trial_checks.reliability(line)
                    except FieldError as exc:
                        raise at(self.source, number, exc) from None
                    # What RunReliability.counts holds for the provider, as the line gives it.
                    reliability[line.provider] = {
                        "operations": msgspec.to_builtins(line.operations),
                        "unplaced": line.unplaced,
                    }
                    continue
                try:
                    benchmark, unit_id, provider_id = trial_checks.check(line)
                except FieldError as exc:
                    raise at(self.source, number, exc) from None
                writer.add(number, line, benchmark, unit_id, provider_id)
            writer.finish()
        except BaseException:
            writer.abort()
            raise
        self._check_whole(version, trailer, trailer_number, writer.trial_count)
        self._store_reliability(run, version, trial_checks, trailer_number, reliability, counts)
        UnsuccessfulCount.objects.bulk_create(counts)
        counted = sum(n for c in counts for n in c.outcomes.values())
        return ImportResult(
            run, writer.trial_count, writer.measurement_count, self.warnings, header.form, counted
        )

    def _counts(self, run, trial_checks, number: int, line: CountsLine) -> UnsuccessfulCount:
        """A checked counts line as the row that stores it (written once the file is whole)."""
        try:
            benchmark, unit_id, provider_id = trial_checks.count(line)
        except FieldError as exc:
            raise at(self.source, number, exc) from None
        return UnsuccessfulCount(
            run=run,
            benchmark_id=benchmark.id,
            unit_id=unit_id,
            provider_id=provider_id,
            outcomes=dict(sorted(line.outcomes.items())),
            unreplaced_provider_failures=line.unreplaced_provider_failures,
        )

    def _store_reliability(self, run, version, trial_checks, number, reliability, counts) -> None:
        """Store the reliability lines as the run's counts, which its publication then uses;
        an older file's failures known only as counts are recounted there, unplaced."""
        if version < 6:
            failures = sum(c.outcomes.get(o, 0) for c in counts for o in FAILED_OUTCOMES)
            if failures:
                warning = UNPLACED_WARNING.format(
                    source=self.source, version=version, failures=failures
                )
                self.warnings.append(warning)
            return
        missing = trial_checks.unreliable_provider()
        if missing is not None:
            problem = f"provider {missing!r} has trial or counts lines but no reliability line"
            raise at(self.source, number, problem)
        RunReliability.objects.create(run=run, counts=reliability)

    def _header(self, number: int, raw: bytes) -> tuple[Header, int]:
        peek = decode(self.source, number, raw, _peek_decoder)
        if peek.type != "run":
            raise at(
                self.source,
                number,
                FieldError("type", "the first line must be the run header (type 'run')"),
            )
        version = peek.schema_version
        if type(version) is not int or version not in READABLE_VERSIONS:
            known = " and ".join(str(v) for v in READABLE_VERSIONS)
            problem = f"{version!r} is not supported (this reader reads versions {known})"
            raise at(self.source, number, FieldError("schema_version", problem))
        header = decode(self.source, number, raw, _header_decoder)
        if version < 3 and header.form != FULL:
            problem = f"a version-{version} file has no form: it holds every trial"
            raise at(self.source, number, FieldError("form", problem))
        try:
            checks.check_header(header)
        except FieldError as exc:
            raise at(self.source, number, exc) from None
        return header, version

    def _check_whole(self, version: int, trailer: Trailer | None, number: int, trials: int):
        if version == 1:
            if trailer is not None:
                raise at(self.source, number, "a version-1 file has no trailer line")
            self.warnings.append(V1_WARNING.format(source=self.source))
            return
        if trailer is None:
            raise at(
                self.source,
                self.lines.last_number,
                "the file ends without its trailer line: it was cut short (or the trailer was "
                "removed), so it is not imported",
            )
        if trailer.trials != trials:
            problem = f"the trailer counts {trailer.trials} trial lines, the file has {trials}"
            raise at(self.source, number, FieldError("trials", problem))
        if trailer.sha256 != self.lines.digest_before_last:
            problem = "does not match the bytes before this line: the file was changed or damaged"
            raise at(self.source, number, FieldError("sha256", problem))


def _store_definitions(source: str, header: Header):
    """Create the run and find or create its providers, benchmarks and units."""
    info = header.run
    if Run.objects.filter(id=info.id).exists():
        raise FieldError("run.id", f"run {info.id} is already in the database")
    holder = Run.objects.sharing_labels_with(info.id)
    if holder is not None:
        # The digits name every sandbox of a run: cleanup would take one run's for the other's.
        raise FieldError(
            "run.id",
            f"{info.id} begins with the same {LABEL_DIGITS} hex digits as run "
            f"{holder.id} already in the database, which name every sandbox of a run",
        )
    try:
        # Stored as given, so an export gives the same bytes.
        manifest = Manifest.from_json(header.manifest)
    except ManifestError as exc:
        raise FieldError("manifest", str(exc)) from None
    if manifest.rerun_of is not None:
        # A re-run resolves a pair of another run here, and the board takes the pair from it:
        # only this database's own re-runs may.
        raise FieldError("manifest.rerun_of", "an imported run cannot be a re-run of a run here")
    run = Run.objects.create(
        id=info.id,
        name=info.name,
        status=info.status,
        manifest=header.manifest,
        # Kept for comparison only: publishing recomputes the audit from the stored trials.
        imported_audit_report=header.audit_report,
        created_at=info.created_at or datetime.now(UTC),
        started_at=info.started_at,
        ended_at=info.ended_at,
    )
    RunTransition.objects.create(
        run=run,
        from_status=RunStatus.PLANNED,
        to_status=info.status,
        note=f"imported from {source}",
    )
    providers = {}
    for i, entry in enumerate(header.providers):
        values = {name: getattr(entry, name) for name in PROVIDER_FIELDS}
        try:
            provider = ensure_provider(values, "this file")
        except DefinitionConflict as exc:
            raise FieldError(f"providers[{i}].{exc.field}", str(exc)) from None
        providers[entry.slug] = provider.id
    benchmarks = {}
    for i, entry in enumerate(header.benchmarks):
        benchmarks[(entry.slug, entry.version)] = _benchmark(i, entry)
    MeasurementName.objects.bulk_create(
        MeasurementName(
            run=run,
            benchmark_id=benchmarks[(entry.slug, entry.version)].id,
            kind=kind,
            name=name,
            unit=declared.unit,
            clock=declared.clock,
        )
        for entry in header.benchmarks
        for kind, names in (
            (METRIC, entry.measurements.metrics),
            (STAGE, entry.measurements.stages),
        )
        for name, declared in names.items()
    )
    references = {
        Provider._meta.db_table: list(providers.values()),
        Benchmark._meta.db_table: [b.id for b in benchmarks.values()],
        Unit._meta.db_table: [u for b in benchmarks.values() for u in b.units.values()],
    }
    trial_checks = checks.TrialChecks(
        benchmarks, providers, run_started=header.run.started_at, run_ended=header.run.ended_at
    )
    return run, trial_checks, references


def _benchmark(index: int, entry) -> checks.BenchmarkRef:
    values = {name: getattr(entry, name) for name in BENCHMARK_FIELDS}
    try:
        benchmark = ensure_benchmark(values, "this file")
    except DefinitionConflict as exc:
        raise FieldError(f"benchmarks[{index}].{exc.field}", str(exc)) from None
    units = {}
    for j, unit_entry in enumerate(entry.units):
        unit_values = {name: getattr(unit_entry, name) for name in UNIT_FIELDS}
        try:
            unit = ensure_unit(benchmark, unit_values, "this file")
        except DefinitionConflict as exc:
            raise FieldError(f"benchmarks[{index}].units[{j}].{exc.field}", str(exc)) from None
        units[unit.slug] = unit.id
    declared = entry.measurements
    return checks.BenchmarkRef(
        id=benchmark.id,
        units=units,
        metrics={name: (d.unit, d.clock) for name, d in declared.metrics.items()},
        stages={name: (d.unit, d.clock) for name, d in declared.stages.items()},
    )
