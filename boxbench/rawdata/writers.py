"""Bulk writes of checked trial lines: COPY on PostgreSQL, executemany on SQLite.

Rows are written in batches; each batch keeps the file line of every row it holds, so an error
the database still raises is reported at the file's line, not the batch's row.

On PostgreSQL the importer has checked every reference itself (boxbench/rawdata/checks.py) and
holds a KEY SHARE lock on the providers, benchmarks and units it refers to, the lock a foreign-key
check would take. So for the length of its own transaction it can set session_replication_role to
replica, which skips the per-row foreign-key triggers; unique indexes and CHECK constraints still
apply. Nothing outside the transaction changes. Without the privilege to set it (not a superuser),
or when a table has triggers of its own, the triggers run as usual: slower, equally correct.
"""

import re
import uuid
from datetime import UTC, datetime

import msgspec
from django.db import DatabaseError, connection, transaction

from boxbench.models import Measurement, MeasurementKind, Trial, TrialState
from boxbench.rawdata.errors import FieldError
from boxbench.rawdata.schema import TrialLine

BATCH = 5000

TRIAL_COLUMNS = (
    "id", "run_id", "benchmark_id", "unit_id", "provider_id", "round", "seq", "attempt",
    "replaces_id", "batch", "state", "outcome", "owner", "cause", "job_host", "started_at",
    "ended_at", "in_flight", "placement", "host_load", "cost_usd",
)  # fmt: skip
MEASUREMENT_COLUMNS = ("trial_id", "kind", "name", "value", "unit", "clock", "clock_gate")

# The format's name for a column, to name the field of a database error.
FIELDS = {
    "id": "trial", "trial_id": "trial", "benchmark_id": "benchmark", "unit_id": "unit",
    "provider_id": "provider", "replaces_id": "replaces", "kind": "metrics", "name": "metrics",
    "value": "metrics", "clock_gate": "clock_gates",
}  # fmt: skip

_encode = msgspec.json.Encoder().encode
METRIC, STAGE, DONE = (
    MeasurementKind.METRIC.value,
    MeasurementKind.STAGE.value,
    TrialState.DONE.value,
)


class RowError(Exception):
    """The database refused a row; `number` is the file line it came from."""

    def __init__(self, number: int, error: FieldError):
        super().__init__(str(error))
        self.number = number
        self.error = error


class Writer:
    """Collects rows of checked trial lines and writes them a batch at a time."""

    def __init__(self, run_id: uuid.UUID):
        self.run_id = run_id
        self.trials: list[tuple] = []
        self.trial_lines: list[int] = []
        self.measurements: list[tuple] = []
        self.measurement_lines: list[int] = []
        self.trial_count = 0
        self.measurement_count = 0

    def add(self, number: int, trial: TrialLine, benchmark, unit_id: int, provider_id: int):
        tid = trial.trial
        self.trials.append(
            (
                tid, self.run_id, benchmark.id, unit_id, provider_id, trial.round, trial.seq,
                trial.attempt, trial.replaces, trial.batch, DONE, trial.outcome, trial.owner,
                trial.cause, trial.job_host, self.moment(trial.started_at),
                self.moment(trial.ended_at), trial.in_flight, _encode(trial.placement).decode(),
                _encode(trial.host_load).decode(), trial.cost_usd,
            )
        )  # fmt: skip
        self.trial_lines.append(number)
        gates = trial.clock_gates
        for kind, values, declared, gate_of in (
            (METRIC, trial.metrics, benchmark.metrics, gates.metrics if gates else None),
            (STAGE, trial.stages, benchmark.stages, gates.stages if gates else None),
        ):
            for name, value in values.items():
                unit, clock = declared[name]
                gate = gate_of.get(name, "") if gate_of else ""
                self.measurements.append((tid, kind, name, value, unit, clock, gate))
                self.measurement_lines.append(number)
        if len(self.trials) >= BATCH:
            self.flush()

    def flush(self):
        if self.trials:
            self.write(Trial._meta.db_table, TRIAL_COLUMNS, self.trials, self.trial_lines)
            self.trial_count += len(self.trials)
        if self.measurements:
            table = Measurement._meta.db_table
            self.write(table, MEASUREMENT_COLUMNS, self.measurements, self.measurement_lines)
            self.measurement_count += len(self.measurements)
        self.trials, self.trial_lines = [], []
        self.measurements, self.measurement_lines = [], []

    def finish(self):
        self.flush()

    def moment(self, value: datetime | None):
        return value

    def write(self, table: str, columns: tuple, rows: list[tuple], lines: list[int]):
        raise NotImplementedError


def writer_for(run_id: uuid.UUID, references: dict[str, list[int]]) -> Writer:
    if connection.vendor == "postgresql":
        return PostgresWriter(run_id, references)
    return SqliteWriter(run_id)


class PostgresWriter(Writer):
    def __init__(self, run_id: uuid.UUID, references: dict[str, list[int]]):
        super().__init__(run_id)
        self.cursor = connection.cursor().cursor  # psycopg's own, for COPY
        for table, ids in references.items():
            # The lock a foreign-key check takes: nobody deletes what these trials refer to.
            self.cursor.execute(f"SELECT 1 FROM {table} WHERE id = ANY(%s) FOR KEY SHARE", [ids])
        self.replica = self._skip_foreign_key_triggers()

    def _skip_foreign_key_triggers(self) -> bool:
        tables = [Trial._meta.db_table, Measurement._meta.db_table]
        self.cursor.execute(
            "SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal"
            " AND tgrelid = ANY(%s::regclass[])",
            [tables],
        )
        if self.cursor.fetchone()[0]:
            return False  # triggers of their own would be skipped too
        try:
            with transaction.atomic():
                self.cursor.execute("SET LOCAL session_replication_role = replica")
        except DatabaseError:
            return False
        return True

    def finish(self):
        self.flush()
        if self.replica:
            self.cursor.execute("SET LOCAL session_replication_role = origin")
        self.cursor.close()

    def write(self, table, columns, rows, lines):
        import psycopg

        try:
            with self.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        except psycopg.Error as exc:
            raise _located(exc, lines) from None


_COPY_CONTEXT = re.compile(r"COPY \w+, line (?P<row>\d+)(?:, column (?P<column>\w+))?")


def _located(exc, lines: list[int]) -> Exception:
    diag = exc.diag
    found = _COPY_CONTEXT.search(diag.context or "")
    if not found or not 0 < int(found["row"]) <= len(lines):
        return exc  # not about a row of ours: the caller reports it as it is
    column = found["column"] or _key_column(diag.message_detail or "")
    problem = _problem(diag.constraint_name or "", diag.message_primary, diag.message_detail)
    return RowError(lines[int(found["row"]) - 1], FieldError(FIELDS.get(column, column), problem))


def _key_column(detail: str) -> str:
    key = re.match(r"Key \((\w+)", detail)
    return key[1] if key else "line"


def _problem(constraint: str, primary: str, detail: str | None) -> str:
    if constraint.endswith("_pkey"):
        return "this trial id is already in the database or earlier in this file"
    text = primary + (f" ({detail})" if detail else "")
    return f"the database refused it: {text}"


class SqliteWriter(Writer):
    def __init__(self, run_id: uuid.UUID):
        super().__init__(run_id)
        self.run_id = run_id.hex

    def moment(self, value: datetime | None):
        # Django's own storage on SQLite: naive UTC text.
        if value is None:
            return None
        if value.tzinfo is not UTC:
            value = value.astimezone(UTC)
        return str(value.replace(tzinfo=None))

    def write(self, table, columns, rows, lines):
        import sqlite3

        rows = [tuple(v.hex if type(v) is uuid.UUID else v for v in row) for row in rows]
        sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
        raw = connection.connection
        try:
            with transaction.atomic():
                raw.executemany(sql, rows)
        except sqlite3.DatabaseError:
            raise self._locate(raw, sql, table, rows, lines) from None

    @staticmethod
    def _locate(raw, sql, table, rows, lines) -> Exception:
        """executemany names no row: insert the batch a row at a time, then undo it all."""
        import sqlite3

        found = None
        try:
            with transaction.atomic():
                for row, number in zip(rows, lines, strict=True):
                    try:
                        raw.execute(sql, row)
                    except sqlite3.DatabaseError as exc:
                        found = _sqlite_row_error(table, str(exc), number)
                        break
                raise _Undo
        except _Undo:
            pass
        return found or DatabaseError(f"a batch of {table} was refused, but no single row of it")


def _sqlite_row_error(table: str, message: str, number: int) -> RowError:
    column = message.rsplit(f"{table}.", 1)[-1] if f"{table}." in message else "line"
    if message.startswith("UNIQUE") and column == "id":
        problem = "this trial id is already in the database or earlier in this file"
    else:
        problem = f"the database refused it: {message}"
    return RowError(number, FieldError(FIELDS.get(column, column), problem))


class _Undo(Exception):
    pass
