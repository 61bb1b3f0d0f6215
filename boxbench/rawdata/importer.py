"""Import: a file read back in one transaction. Any malformed line stops it with the file, line
number and field named, and nothing of that file is written.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson
from django.db import connection, transaction

from boxbench.definitions import DefinitionConflict, ensure_benchmark, ensure_provider, ensure_unit
from boxbench.models import (
    Measurement,
    MeasurementKind,
    Run,
    RunStatus,
    RunTransition,
    Trial,
    TrialState,
)
from boxbench.rawdata.schema import (
    BENCHMARK_FIELDS,
    GATES,
    OUTCOMES,
    OWNERS,
    PAGE_SIZE,
    PROVIDER_FIELDS,
    RUN_STATUSES,
    SCHEMA_VERSION,
    UNIT_FIELDS,
    RawDataError,
    _dumps,
)


@dataclass
class ImportResult:
    run: Run
    trials: int
    measurements: int


class _Line:
    """Typed field access that names the file, line and field in every error."""

    def __init__(self, source: str, number: int, data: dict):
        self.source, self.number, self.data = source, number, data

    def fail(self, field: str, problem: str):
        raise RawDataError(f"{self.source}, line {self.number}, field {field!r}: {problem}")

    def get(self, field: str, kind, *, optional=False, choices=None):
        if field not in self.data:
            if optional:
                return None
            self.fail(field, "is missing")
        value = self.data[field]
        if value is None:
            if optional:
                return None
            self.fail(field, "must not be null")
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            self.fail(field, f"must be {_kind_name(kind)}, not {type(value).__name__}")
        if choices is not None and value not in choices:
            self.fail(field, f"{value!r} is not one of {sorted(choices)}")
        return value

    def uuid(self, field: str, *, optional=False) -> uuid.UUID | None:
        value = self.get(field, str, optional=optional)
        if value is None:
            return None
        try:
            return uuid.UUID(value)
        except ValueError:
            self.fail(field, f"{value!r} is not a UUID")

    def moment(self, field: str) -> datetime | None:
        value = self.get(field, str, optional=True)
        if value is None:
            return None
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            self.fail(field, f"{value!r} is not an ISO 8601 time")
        if parsed.tzinfo is None:
            self.fail(field, f"{value!r} has no time zone")
        return parsed

    def count(self, field: str, minimum: int) -> int:
        value = self.get(field, int)
        if value < minimum:
            self.fail(field, f"must be at least {minimum}")
        return value

    def numbers(self, field: str) -> dict[str, float | None]:
        values = self.get(field, dict)
        for name, value in values.items():
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if value is not None and not (number and math.isfinite(value)):
                self.fail(field, f"{name!r} must be a finite number or null")
        return {name: None if v is None else float(v) for name, v in values.items()}


def _kind_name(kind) -> str:
    names = {str: "a string", int: "an integer", float: "a number", dict: "an object"}
    return names.get(kind, "a list" if kind is list else "a boolean")


def _parse(source: str, number: int, text: str) -> _Line:
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise RawDataError(
            f"{source}, line {number}: not valid JSON ({exc.msg} at column {exc.colno})"
        ) from None
    if not isinstance(data, dict):
        raise RawDataError(f"{source}, line {number}: a line must be a JSON object")
    return _Line(source, number, data)


def import_jsonl(path: str | Path, lines: Iterable[str] | None = None) -> ImportResult:
    """Import a run from a JSON Lines file; all of it or nothing."""
    source = str(path)
    if lines is None:
        try:
            handle = open(path, encoding="utf-8")  # noqa: SIM115 (closed below)
        except OSError as exc:
            raise RawDataError(f"{source}: cannot be read ({exc.strerror})") from None
    else:
        handle = None
    try:
        with transaction.atomic():
            return _import_lines(source, lines if handle is None else handle)
    except UnicodeDecodeError as exc:
        raise RawDataError(f"{source}: not UTF-8 text ({exc.reason})") from None
    finally:
        if handle is not None:
            handle.close()


def _import_lines(source: str, lines: Iterable[str]) -> ImportResult:
    numbered = enumerate(lines, start=1)
    header = None
    for number, text in numbered:
        if text.strip():
            header = _parse(source, number, text)
            break
    if header is None:
        raise RawDataError(f"{source}: the file is empty; its first line must be the run header")
    importer = _Importer(source, header)
    for number, text in numbered:
        if not text.strip():
            continue
        importer.add(_parse(source, number, text))
    importer.finish()
    return ImportResult(importer.run, importer.trial_count, importer.measurement_count)


class _Importer:
    def __init__(self, source: str, header: _Line):
        self.source = source
        if header.get("type", str) != "run":
            header.fail("type", "the first line must be the run header (type 'run')")
        version = header.get("schema_version", int)
        if version != SCHEMA_VERSION:
            header.fail("schema_version", f"{version} is not supported (this is {SCHEMA_VERSION})")
        self.run = self._create_run(header)
        self.providers = self._providers(header)
        self.benchmarks, self.units, self.meta = self._benchmarks(header)
        self.trial_count = 0
        self.measurement_count = 0
        self.trials: list[tuple] = []
        self.measurements: list[tuple] = []
        self.writer = _Writer()

    def _create_run(self, header: _Line) -> Run:
        info = _Line(self.source, header.number, header.get("run", dict))
        run_id = info.uuid("id")
        if Run.objects.filter(id=run_id).exists():
            info.fail("id", f"run {run_id} is already in the database")
        manifest = header.get("manifest", dict)
        audit = header.get("audit_report", dict, optional=True)
        status = info.get("status", str, choices=RUN_STATUSES)
        run = Run.objects.create(
            id=run_id,
            name=info.get("name", str),
            status=status,
            manifest=manifest,
            # Kept for comparison only: publishing recomputes the audit from the stored trials.
            imported_audit_report=audit,
            created_at=info.moment("created_at") or datetime.now(UTC),
            started_at=info.moment("started_at"),
            ended_at=info.moment("ended_at"),
        )
        RunTransition.objects.create(
            run=run,
            from_status=RunStatus.PLANNED,
            to_status=status,
            note=f"imported from {self.source}",
        )
        return run

    def _providers(self, header: _Line) -> dict[str, int]:
        found = {}
        for entry in header.get("providers", list):
            line = _entry(header, "providers", entry)
            slug = line.get("slug", str)
            values = {name: line.data.get(name) for name in PROVIDER_FIELDS}
            for name in PROVIDER_FIELDS:
                line.get(name, dict if name in ("declaration", "pricing") else str)
            try:
                provider = ensure_provider(values, "this file")
            except DefinitionConflict as exc:
                line.fail(exc.field, str(exc))
            found[slug] = provider.id
        return found

    def _benchmarks(self, header: _Line):
        benchmarks, units, meta = {}, {}, {}
        for entry in header.get("benchmarks", list):
            line = _entry(header, "benchmarks", entry)
            values = {name: line.data.get(name) for name in BENCHMARK_FIELDS}
            for name in BENCHMARK_FIELDS:
                kind = {"cpus": int, "memory_mib": int, "trials_per_unit": int}.get(name, str)
                if name == "ranking_floor":
                    kind = int
                if name in ("required_capabilities", "stage_names"):
                    kind = list
                if name in ("charted", "steps_include_create_or_build"):
                    kind = bool
                line.get(name, kind)
            key = (values["slug"], values["version"])
            try:
                benchmark = ensure_benchmark(values, "this file")
            except DefinitionConflict as exc:
                line.fail(exc.field, str(exc))
            benchmarks[key] = benchmark.id
            for unit_entry in line.get("units", list):
                unit_line = _entry(line, "units", unit_entry)
                unit_values = {name: unit_line.data.get(name) for name in UNIT_FIELDS}
                for name in UNIT_FIELDS:
                    unit_line.get(name, dict if name == "definition" else str)
                try:
                    unit = ensure_unit(benchmark, unit_values, "this file")
                except DefinitionConflict as exc:
                    unit_line.fail(exc.field, str(exc))
                units[(key, unit.slug)] = unit.id
            measurements = _Line(self.source, line.number, line.get("measurements", dict))
            meta[key] = {
                group: _measurement_group(measurements, group) for group in ("metrics", "stages")
            }
        return benchmarks, units, meta

    def add(self, line: _Line):
        if line.get("type", str) != "trial":
            line.fail("type", "every line after the header must be a trial (type 'trial')")
        key = (line.get("benchmark", str), line.get("benchmark_version", str))
        if key not in self.benchmarks:
            line.fail("benchmark", f"{key[0]!r} version {key[1]!r} is not in the run header")
        unit_slug = line.get("unit", str)
        if (key, unit_slug) not in self.units:
            line.fail("unit", f"{unit_slug!r} is not a unit of {key[0]!r} in the run header")
        provider_slug = line.get("provider", str)
        if provider_slug not in self.providers:
            line.fail("provider", f"{provider_slug!r} is not in the run header")
        trial_id = line.uuid("trial")
        outcome = line.get("outcome", str, choices=OUTCOMES)
        in_flight = line.get("in_flight", float, optional=True)
        cost = line.get("cost_usd", float, optional=True)
        self.trials.append(
            (
                trial_id, self.run.id, self.benchmarks[key], self.units[(key, unit_slug)],
                self.providers[provider_slug], line.count("round", 1), line.count("seq", 1),
                line.count("attempt", 1), line.uuid("replaces", optional=True),
                line.get("batch", str), TrialState.DONE, outcome,
                line.get("owner", str, choices=OWNERS), line.get("cause", str),
                line.get("job_host", str), line.moment("started_at"), line.moment("ended_at"),
                in_flight, line.get("placement", dict), line.get("host_load", dict), cost,
            )
        )  # fmt: skip
        gates = line.get("clock_gates", dict, optional=True) or {}
        for group, kind in (("metrics", MeasurementKind.METRIC), ("stages", MeasurementKind.STAGE)):
            group_gates = gates.get(group, {})
            for name, value in line.numbers(group).items():
                declared = self.meta[key][group].get(name)
                if declared is None:
                    line.fail(group, f"{name!r} is not declared in the header's measurements")
                gate = group_gates.get(name, "")
                if gate not in GATES:
                    line.fail("clock_gates", f"{gate!r} is not one of pass, fail")
                self.measurements.append(
                    (trial_id, kind, name, value, declared["unit"], declared["clock"], gate)
                )
        self.trial_count += 1
        if len(self.trials) >= PAGE_SIZE:
            self._flush()

    def _flush(self):
        self.writer.write_trials(self.trials)
        self.writer.write_measurements(self.measurements)
        self.measurement_count += len(self.measurements)
        self.trials, self.measurements = [], []

    def finish(self):
        self._flush()
        orphan = (
            Trial.objects.filter(run=self.run, replaces__isnull=False)
            .exclude(replaces_id__in=Trial.objects.filter(run=self.run).values("id"))
            .values_list("id", "replaces_id")
            .first()
        )
        if orphan:
            raise RawDataError(
                f"{self.source}: trial {orphan[0]} replaces {orphan[1]}, which is not a trial "
                "of this run"
            )


def _entry(parent: _Line, field: str, entry) -> _Line:
    if not isinstance(entry, dict):
        parent.fail(field, "every entry must be an object")
    return _Line(parent.source, parent.number, entry)


def _measurement_group(line: _Line, group: str) -> dict:
    declared = line.get(group, dict)
    for name, meta in declared.items():
        entry = _entry(line, f"measurements.{group}.{name}", meta)
        entry.get("unit", str)
        entry.get("clock", str, choices={"job_host", "guest"})
    return declared


class _Writer:
    """Bulk inserts: COPY on PostgreSQL, executemany elsewhere."""

    def __init__(self):
        self.postgres = connection.vendor == "postgresql"

    def write_trials(self, rows: list[tuple]):
        columns = (
            "id", "run_id", "benchmark_id", "unit_id", "provider_id", "round", "seq", "attempt",
            "replaces_id", "batch", "state", "outcome", "owner", "cause", "job_host",
            "started_at", "ended_at", "in_flight", "placement", "host_load", "cost_usd",
        )  # fmt: skip
        json_at = (columns.index("placement"), columns.index("host_load"))
        self._write(Trial._meta.db_table, columns, rows, json_at)

    def write_measurements(self, rows: list[tuple]):
        columns = ("trial_id", "kind", "name", "value", "unit", "clock", "clock_gate")
        self._write(Measurement._meta.db_table, columns, rows, ())

    def _write(self, table: str, columns: tuple, rows: list[tuple], json_at: tuple):
        if not rows:
            return
        if json_at:
            rows = [
                tuple(_dumps(v) if i in json_at else v for i, v in enumerate(row)) for row in rows
            ]
        with connection.cursor() as cursor:
            if self.postgres:
                self._copy(cursor, table, columns, rows)
            else:
                rows = [_sqlite_row(row) for row in rows]
                placeholders = ", ".join(["%s"] * len(columns))
                cursor.executemany(
                    f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders})", rows
                )

    @staticmethod
    def _copy(cursor, table, columns, rows):
        sql = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
        with cursor.cursor.copy(sql) as copy:
            for row in rows:
                copy.write_row(row)


def _sqlite_row(row: tuple) -> tuple:
    """Values as Django stores them on SQLite: UUIDs as 32 hex digits, times as UTC text."""
    return tuple(_sqlite_value(value) for value in row)


def _sqlite_value(value):
    if isinstance(value, uuid.UUID):
        return value.hex
    if isinstance(value, datetime):
        return connection.ops.adapt_datetimefield_value(value)
    return value
