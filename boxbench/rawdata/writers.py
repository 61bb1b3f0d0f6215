"""Bulk writes of checked trial lines: COPY on PostgreSQL, executemany on SQLite.

Rows are written in batches; each batch keeps the file line of every row it holds, so an error
the database still raises is reported at the file's line, not the batch's row. A trial's
measurements are columns of its row, as the file has them.

On PostgreSQL the importer has checked every reference itself (boxbench/rawdata/checks.py) and
holds a KEY SHARE lock on the providers, benchmarks and units it refers to, the lock a foreign-key
check would take. So for the length of its own transaction it can set session_replication_role to
replica, which skips the per-row foreign-key triggers; unique indexes and CHECK constraints still
apply. Nothing outside the transaction changes. Without the privilege to set it (not a superuser),
or when a table has triggers of its own that replica mode would skip (not enabled ALWAYS), the
triggers run as usual: slower, equally correct.
"""

import contextlib
import re
import uuid
from datetime import UTC, datetime

import msgspec
from django.db import DatabaseError, connection, transaction

from boxbench.models import Trial, TrialState
from boxbench.rawdata.errors import FieldError, RawDataError
from boxbench.rawdata.schema import TrialLine

BATCH = 5000

TRIAL_COLUMNS = (
    "id",
    "run_id",
    "benchmark_id",
    "unit_id",
    "provider_id",
    "round",
    "seq",
    "attempt",
    "replaces_id",
    "batch",
    "state",
    "outcome",
    "owner",
    "cause",
    "job_host",
    "started_at",
    "ended_at",
    "in_flight",
    "placement",
    "host_load",
    "cost_usd",
    "cut_short",
    "metrics",
    "stages",
    "clock_gates",
    "requests",
)

# The format's name for a column, to name the field of a database error.
FIELDS = {
    "id": "trial",
    "trial_id": "trial",
    "benchmark_id": "benchmark",
    "unit_id": "unit",
    "provider_id": "provider",
    "replaces_id": "replaces",
}

_encode = msgspec.json.Encoder().encode
DONE = TrialState.DONE.value


class RowError(Exception):
    """The database refused a row; `number` is the file line it came from."""

    def __init__(self, number: int, error: FieldError):
        super().__init__(str(error))
        self.number = number
        self.error = error


class Writer:
    """Collects rows of checked trial lines and writes them a batch at a time."""

    def __init__(self, run_id: uuid.UUID):
        self.run_id = run_id.hex if self.hex_ids else run_id
        self.trials: list[tuple] = []
        self.trial_lines: list[int] = []
        self.trial_count = 0
        self.measurement_count = 0

    # How ids and JSON objects go into a row: as they are for PostgreSQL's binary COPY, as text
    # for SQLite.
    hex_ids = False

    @staticmethod
    def json(value: dict):
        return value

    def add(self, number: int, trial: TrialLine, benchmark, unit_id: int, provider_id: int):
        tid = trial.trial.hex if self.hex_ids else trial.trial
        replaces = trial.replaces
        if replaces is not None and self.hex_ids:
            replaces = replaces.hex
        moment, json = self.moment, self.json
        metrics, stages = trial.metrics or {}, trial.stages or {}
        gates = None
        if trial.clock_gates is not None:  # the checks kept only gates of the trial's values
            gates = {
                group: gated
                for group, gated in (
                    ("metrics", trial.clock_gates.metrics),
                    ("stages", trial.clock_gates.stages),
                )
                if gated
            } or None
        self.trials.append(
            (
                tid,
                self.run_id,
                benchmark.id,
                unit_id,
                provider_id,
                trial.round,
                trial.seq,
                trial.attempt,
                replaces,
                trial.batch,
                DONE,
                trial.outcome,
                trial.owner,
                trial.cause,
                trial.job_host,
                moment(trial.started_at),
                moment(trial.ended_at),
                trial.in_flight,
                json(trial.placement),
                json(trial.host_load),
                trial.cost_usd,
                # Not a field of the format: a trial cut short says so in its cause, as the
                # runner writes it (runner.trial_failures.CUT_SHORT).
                trial.cause.startswith("cut short: "),
                json(metrics),
                json(stages),
                None if gates is None else json(gates),
                json([msgspec.structs.asdict(r) for r in trial.requests]),
            )
        )
        self.trial_lines.append(number)
        self.measurement_count += len(metrics) + len(stages)
        if len(self.trials) >= BATCH:
            self.flush()

    def flush(self):
        if self.trials:
            table = Trial._meta.db_table
            keep_open = self.keep_open
            self.write(table, TRIAL_COLUMNS, self.trials, self.trial_lines, keep_open=keep_open)
            self.trial_count += len(self.trials)
        self.trials, self.trial_lines = [], []

    # Whether a batch's rows may still be on their way when `flush` returns.
    keep_open = False

    def finish(self):
        self.flush()

    def abort(self):
        pass

    def moment(self, value: datetime | None):
        return value

    def write(
        self, table: str, columns: tuple, rows: list[tuple], lines: list[int], keep_open=False
    ):
        raise NotImplementedError


def writer_for(run_id: uuid.UUID, references: dict[str, list[int]]) -> Writer:
    if connection.vendor == "postgresql":
        return PostgresWriter(run_id, references)
    return SqliteWriter(run_id)


class PostgresWriter(Writer):
    def __init__(self, run_id: uuid.UUID, references: dict[str, list[int]]):
        from psycopg.types.json import set_json_dumps

        super().__init__(run_id)
        self.cursor = connection.cursor().cursor  # psycopg's own, for COPY
        set_json_dumps(_encode, context=self.cursor)
        self.types = {}
        self.pending = None
        for table, ids in references.items():
            # The lock a foreign-key check takes: nobody deletes what these trials refer to.
            self.cursor.execute(f"SELECT 1 FROM {table} WHERE id = ANY(%s) FOR KEY SHARE", [ids])
        self.replica = self._skip_foreign_key_triggers()

    def _skip_foreign_key_triggers(self) -> bool:
        tables = [Trial._meta.db_table]
        self.cursor.execute(
            # Triggers enabled ALWAYS (the trial tally's) fire under replica too: they may stay.
            "SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal AND tgenabled <> 'A'"
            " AND tgrelid = ANY(%s::regclass[])",
            [tables],
        )
        if self.cursor.fetchone()[0]:
            return False  # triggers of their own would be skipped too
        import psycopg

        try:
            with transaction.atomic():
                self.cursor.execute("SET LOCAL session_replication_role = replica")
        except (DatabaseError, psycopg.Error):  # not allowed to: the triggers run as usual
            return False
        return True

    def finish(self):
        self.flush()
        self._close_pending()
        if self.replica:
            self.cursor.execute("SET LOCAL session_replication_role = origin")
        self.cursor.close()

    def _types(self, table: str, columns: tuple) -> list[str]:
        """The columns' own types, which binary COPY needs exactly."""
        if table not in self.types:
            self.cursor.execute(
                "SELECT a.attname, t.typname FROM pg_attribute a JOIN pg_type t"
                " ON t.oid = a.atttypid WHERE a.attrelid = %s::regclass AND a.attnum > 0",
                [table],
            )
            found = dict(self.cursor.fetchall())
            self.types[table] = [found[column] for column in columns]
        return self.types[table]

    # A batch's COPY is left open, its rows sent by a thread and stored by the server while the
    # next batch is decoded here; it is closed at the next flush.
    keep_open = True

    def flush(self):
        self._close_pending()
        super().flush()

    def write(self, table, columns, rows, lines, keep_open=False):
        from psycopg.copy import QueuedLibpqWriter

        types = self._types(table, columns)
        # Binary: no number or time text to format here and parse there.
        sql = f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)"
        manager = self.cursor.copy(sql, writer=QueuedLibpqWriter(self.cursor))
        copy = manager.__enter__()
        index = 0
        try:
            copy.set_types(types)
            for index, row in enumerate(rows):  # noqa: B007 (read after an error)
                copy.write_row(row)
        except Exception as exc:  # noqa: BLE001 - mapped to a named refusal below
            problem = exc
            try:
                manager.__exit__(type(exc), exc, exc.__traceback__)
            except Exception as server:  # noqa: BLE001 - the server's own refusal, if it had one
                problem = server
            raise _mapped(problem, lines, len(rows), index) from None
        if keep_open:
            self.pending = (manager, lines, len(rows))
        else:
            self._close(manager, lines, len(rows))

    def _close(self, manager, lines, count: int):
        try:
            manager.__exit__(None, None, None)
        except Exception as exc:  # noqa: BLE001 - mapped to a named refusal
            raise _mapped(exc, lines, count, None) from None

    def _close_pending(self):
        if self.pending is not None:
            manager, lines, count = self.pending
            self.pending = None
            self._close(manager, lines, count)

    def abort(self):
        """Stop a COPY left open, before the transaction is rolled back."""
        if self.pending is not None:
            manager = self.pending[0]
            self.pending = None
            stop = RawDataError("import stopped")
            with contextlib.suppress(Exception):
                manager.__exit__(RawDataError, stop, None)


def _mapped(exc: Exception, lines, count: int, index: int | None) -> Exception:
    import psycopg

    if isinstance(exc, psycopg.Error):
        if exc.diag.context is None and exc.diag.sqlstate is None and index is not None:
            return _row_refused(lines[index], exc)  # refused here, before it was sent
        return _located(exc, lines, count)
    if isinstance(exc, ValueError | OverflowError | TypeError) and index is not None:
        return _row_refused(lines[index], exc)
    return exc


def _row_refused(number: int, exc: Exception) -> RowError:
    return RowError(number, FieldError("line", f"cannot be written to the database: {exc}"))


_COPY_CONTEXT = re.compile(r"COPY \w+, line (?P<row>\d+)(?:, column (?P<column>\w+))?")


def _located(exc, lines, count: int) -> Exception:
    diag = exc.diag
    found = _COPY_CONTEXT.search(diag.context or "")
    if not found or not 0 < int(found["row"]) <= count:
        # Not about a row of ours: reported as it is, as a database error.
        return DatabaseError(f"{diag.message_primary or exc} ({diag.context or 'no context'})")
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


# SQLite has row-level triggers only: the trial tally's insert trigger (migration 0009) runs an
# upsert for every row. Inside the import's transaction, which holds SQLite's one write lock, the
# writer sets it aside, adds the run's counts in one grouped upsert at the end, and puts the
# trigger back as it was; a failed import rolls all three back with the rows.
TALLY_TRIGGER = "trial_tally_insert"
TALLY_ADD = """
INSERT INTO boxbench_trialtally (run_id, provider_id, state, outcome, n)
SELECT run_id, provider_id, state, outcome, count(*) FROM boxbench_trial WHERE run_id = ?
GROUP BY run_id, provider_id, state, outcome
ON CONFLICT (run_id, provider_id, state, outcome) DO UPDATE SET n = n + excluded.n
"""


class SqliteWriter(Writer):
    hex_ids = True

    def __init__(self, run_id: uuid.UUID):
        super().__init__(run_id)
        raw = connection.connection
        found = raw.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", [TALLY_TRIGGER]
        ).fetchone()
        self.tally_trigger = found[0] if found else None
        if self.tally_trigger:
            raw.execute(f"DROP TRIGGER {TALLY_TRIGGER}")

    def finish(self):
        self.flush()
        if self.tally_trigger:
            raw = connection.connection
            raw.execute(TALLY_ADD, [self.run_id])
            raw.execute(self.tally_trigger)

    @staticmethod
    def json(value: dict) -> str:
        return _encode(value).decode()

    def moment(self, value: datetime | None):
        # Django's own storage on SQLite: naive UTC text.
        if value is None:
            return None
        if value.tzinfo is not UTC:
            value = value.astimezone(UTC)
        return str(value.replace(tzinfo=None))

    def write(self, table, columns, rows, lines, keep_open=False):  # every write is whole here
        import sqlite3

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
                for index, row in enumerate(rows):
                    number = lines[index]
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
