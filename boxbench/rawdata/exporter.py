"""`bench export`: stream a run in the raw-data format with constant memory.

A run's trials are read by one cursor in execution order, each with its measurements in its own
row: no per-trial aggregation or lookup in the database. Every line is canonical JSON (compact,
UTF-8, keys sorted at every level, times in UTC with microseconds), so export, import, export
gives the same bytes. The last line is the version-2 trailer: the number of trial lines and the
SHA-256 of every byte before it.

Two forms (docs/raw-data.md): the public form holds the successful trials, without replacement
links, and counts the other attempts per benchmark, unit and provider in counts lines; the full
form, for those who may see private evidence, holds every trial. Counts the database holds (a run
imported from a public file) are counts lines in both forms, and both carry each provider's
reliability counts.
"""

import hashlib
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import msgspec
from django.db import connection, transaction

from boxbench.models import (
    Benchmark,
    MeasurementKind,
    MeasurementName,
    Outcome,
    Provider,
    Run,
    Trial,
    TrialState,
    Unit,
)
from boxbench.rawdata.counts import counts_lines, reliability_lines
from boxbench.rawdata.errors import RawDataError
from boxbench.rawdata.importer import BENCHMARK_FIELDS, PROVIDER_FIELDS, UNIT_FIELDS
from boxbench.rawdata.prefetch import Prefetch
from boxbench.rawdata.schema import FORMS, FULL, PUBLIC, SCHEMA_VERSION
from runner.manifest import public_manifest

PAGE = 5000
CHUNK_BYTES = 256 * 1024

ENCODER = msgspec.json.Encoder(order="sorted")
METRIC, STAGE = MeasurementKind.METRIC.value, MeasurementKind.STAGE.value
# Typed: a value PostgreSQL's jsonb gives back as a whole number is still a float.
_values = msgspec.json.Decoder(dict[str, float | None]).decode


class TrialRecord(msgspec.Struct, tag_field="type", tag="trial", omit_defaults=True, gc=False):
    """A trial line as written: schema.TrialLine with ids and times already as their text."""

    benchmark: str
    benchmark_version: str
    unit: str
    provider: str
    trial: str
    round: int
    seq: int
    attempt: int
    replaces: str | None
    batch: str
    outcome: str
    owner: str
    cause: str
    job_host: str
    started_at: str | None
    ended_at: str | None
    in_flight: float | None
    placement: dict
    host_load: dict
    metrics: dict
    stages: dict
    cost_usd: float | None
    clock_gates: dict | None = None
    requests: list = []


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class Seen:
    """What the header declares, known before the trials stream: the benchmarks, units and
    providers of the form's trials and counts, and the unit and clock of every measurement name
    the run stored for those benchmarks. Each trial is checked against it as it streams."""

    def __init__(self):
        self.benchmarks: set[int] = set()
        self.units: set[int] = set()
        self.providers: set[int] = set()
        # benchmark id → {"metrics": {name: {"unit", "clock"}}, "stages": {...}}
        self.names: dict[int, dict[str, dict]] = {}

    def gather(self, run: Run, form: str) -> None:
        trials = Trial.objects.filter(run=run, state=TrialState.DONE, seq__isnull=False)
        if form != FULL:
            trials = trials.filter(outcome=Outcome.SUCCESS)
        cells = trials.values_list("benchmark_id", "unit_id", "provider_id").distinct()
        for benchmark, unit, provider in cells.order_by():
            self.benchmarks.add(benchmark)
            self.units.add(unit)
            self.providers.add(provider)
        stored = MeasurementName.objects.filter(run=run).order_by("kind", "name")
        for benchmark, kind, name, unit, clock in stored.values_list(
            "benchmark_id", "kind", "name", "unit", "clock"
        ):
            groups = self.names.setdefault(benchmark, {"metrics": {}, "stages": {}})
            groups["metrics" if kind == METRIC else "stages"][name] = {"unit": unit, "clock": clock}

    def declared(self, benchmark_id: int) -> dict:
        return self.names.get(benchmark_id, {"metrics": {}, "stages": {}})

    def check(self, benchmark: int, metrics: dict, stages: dict, slug: str) -> None:
        """A trial's names are declared: otherwise its line could not be read back."""
        groups = self.declared(benchmark)
        for kind, values, group in ((METRIC, metrics, "metrics"), (STAGE, stages, "stages")):
            if not values.keys() <= groups[group].keys():
                name = min(values.keys() - groups[group].keys())
                raise RawDataError(
                    f"benchmark {slug}: {kind} {name!r} of a trial has no unit or clock stored "
                    "for this run"
                )


def run_header(run: Run, seen: Seen, form: str) -> dict:
    benchmarks = []
    units = Unit.objects.filter(id__in=seen.units).order_by("slug")
    chosen = Benchmark.objects.filter(id__in=seen.benchmarks).order_by("slug", "version")
    for benchmark in chosen:
        entry = {name: getattr(benchmark, name) for name in BENCHMARK_FIELDS}
        entry["units"] = [
            {name: getattr(unit, name) for name in UNIT_FIELDS}
            for unit in units
            if unit.benchmark_id == benchmark.id
        ]
        entry["measurements"] = seen.declared(benchmark.id)
        benchmarks.append(entry)
    providers = [
        {name: getattr(provider, name) for name in PROVIDER_FIELDS}
        for provider in Provider.objects.filter(id__in=seen.providers).order_by("slug")
    ]
    return {
        "type": "run",
        "schema_version": SCHEMA_VERSION,
        "run": {
            "id": str(run.id),
            "name": run.name,
            "status": run.status,
            "created_at": _iso(run.created_at),
            "started_at": _iso(run.started_at),
            "ended_at": _iso(run.ended_at),
        },
        # The public form carries the manifest's public projection (runner.manifest).
        "manifest": run.manifest if form == FULL else public_manifest(run.manifest),
        # boxbench's own audit once computed; before that, the report an imported file carried.
        "audit_report": run.audit_report
        if run.audit_report is not None
        else run.imported_audit_report,
        "benchmarks": benchmarks,
        "providers": providers,
        "form": form,
    }


# Times as the format writes them, formatted by the database; ids as text.
PG_TIME = """to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')"""
TRIAL_SQL = """
SELECT t.id{uuid}, t.benchmark_id, t.unit_id, t.provider_id, t.round, t.seq, t.attempt,
       t.replaces_id{uuid}, t.batch, t.outcome, t.owner, t.cause, t.job_host, {started},
       {ended}, t.in_flight, t.placement{json}, t.host_load{json}, t.cost_usd,
       t.metrics{json}, t.stages{json}, t.clock_gates{json}, t.requests{json}
FROM boxbench_trial t
WHERE t.run_id = %s AND t.state = 'done' AND t.seq IS NOT NULL{only}
ORDER BY t.seq
"""


def _pages(cursor, sql: str, params: list) -> Iterator[list[tuple]]:
    cursor.execute(sql, params)
    while rows := cursor.fetchmany(PAGE):
        yield rows


def _sqlite_uuid(value: str | None) -> str | None:
    if value is None:
        return None
    if len(value) != 32:
        return str(uuid.UUID(value))
    return f"{value[:8]}-{value[8:12]}-{value[12:16]}-{value[16:20]}-{value[20:]}"


def _sqlite_time(value: datetime | str | None) -> str | None:
    """A time Django stored on SQLite (naive UTC) as the format writes it."""
    if value is None:
        return None
    if isinstance(value, datetime):  # declared-type conversion
        return value.isoformat(timespec="microseconds") + "Z"
    if len(value) == 26:
        return f"{value[:10]}T{value[11:]}Z"
    if len(value) == 19:
        return f"{value[:10]}T{value[11:]}.000000Z"
    return _iso(datetime.fromisoformat(value).replace(tzinfo=UTC))


class _JsonCache:
    """Decoded JSON column text; placements repeat, so most are decoded once."""

    def __init__(self, limit: int = 4096, decode=msgspec.json.decode):
        self.values: dict[str, dict] = {}
        self.limit = limit
        self.decode = decode

    def __call__(self, text):
        if not isinstance(text, str):
            return text
        value = self.values.get(text)
        if value is None:
            if len(self.values) >= self.limit:
                self.values.clear()
            value = self.values[text] = self.decode(text)
        return value


def _check_form(form: str):
    if form not in FORMS:
        raise RawDataError(f"{form!r} is not a form of the raw data ({', '.join(FORMS)})")


def iter_trials(run: Run, seen: Seen | None = None, form: str = PUBLIC) -> Iterator[TrialRecord]:
    """The run's finished trials in execution order, streamed with constant memory: every one
    in the full form, the successful ones without replacement links in the public form. With
    `seen` (gathered), each trial's measurement names are checked to be declared."""
    _check_form(form)
    only = "" if form == FULL else " AND t.outcome = 'success'"
    postgres = connection.vendor == "postgresql"
    # A gathered header already knows the units: no second pass over the run's trials for them.
    units = (
        Unit.objects.filter(trials__run=run).distinct()
        if seen is None
        else Unit.objects.filter(id__in=seen.units)
    )
    names = {
        "benchmarks": dict(Benchmark.objects.values_list("id", "slug")),
        "versions": dict(Benchmark.objects.values_list("id", "version")),
        "units": dict(units.values_list("id", "slug")),
        "providers": dict(Provider.objects.values_list("id", "slug")),
    }
    if postgres:
        sql = TRIAL_SQL.format(
            uuid="::text",
            json="::text",
            started=PG_TIME.format("t.started_at"),
            ended=PG_TIME.format("t.ended_at"),
            only=only,
        )
        run_id = run.id
    else:
        sql = TRIAL_SQL.format(
            uuid="", json="", started="t.started_at", ended="t.ended_at", only=only
        )
        sql = sql.replace("%s", "?")
        run_id = run.id.hex
    with transaction.atomic():
        connection.ensure_connection()
        raw = connection.connection
        # A server-side cursor on PostgreSQL, binary (no number text to parse): the trials
        # arrive a page at a time.
        trials = raw.cursor(name="rawdata_trials", binary=True) if postgres else raw.cursor()
        # The database reads the next page while this thread encodes the last one.
        prefetch = Prefetch(lambda: _pages(trials, sql, [run_id]))
        try:
            for page in prefetch:
                yield from _records(page, names, postgres, seen, form == FULL)
        finally:
            prefetch.close()
            trials.close()


def _records(trials, names, postgres, seen: Seen, links: bool):
    benchmarks, versions = names["benchmarks"], names["versions"]
    units, providers = names["units"], names["providers"]
    as_uuid = (lambda v: v) if postgres else _sqlite_uuid
    as_time = (lambda v: v) if postgres else _sqlite_time
    placement_of, host_load_of = _JsonCache(), _JsonCache(limit=64)
    # Stages and gates repeat from trial to trial (often empty); metrics are each trial's own.
    stages_of, gates_of = _JsonCache(limit=64, decode=_values), _JsonCache(limit=64)
    check = None if seen is None else seen.check
    for row in trials:
        (
            tid,
            benchmark,
            unit,
            provider,
            round_,
            seq,
            attempt,
            replaces,
            batch,
            outcome,
            owner,
            cause,
            job_host,
            started,
            ended,
            in_flight,
            placement,
            host_load,
            cost,
            metrics,
            stages,
            gates,
            requests,
        ) = row
        metrics = _values(metrics) if isinstance(metrics, str) else metrics
        stages = stages_of(stages)
        if check is not None:
            check(benchmark, metrics, stages, benchmarks[benchmark])
        yield TrialRecord(
            benchmarks[benchmark],
            versions[benchmark],
            units[unit],
            providers[provider],
            as_uuid(tid),
            round_,
            seq,
            attempt,
            as_uuid(replaces) if links else None,
            batch,
            outcome,
            owner,
            cause,
            job_host,
            as_time(started),
            as_time(ended),
            in_flight,
            placement_of(placement),
            host_load_of(host_load),
            metrics,
            stages,
            cost,
            None if gates is None else gates_of(gates),
            msgspec.json.decode(requests) if isinstance(requests, str) else requests,
        )


def iter_jsonl_bytes(run: Run, form: str = PUBLIC) -> Iterator[bytes]:
    """The JSON Lines export in chunks of bytes: header, trials, counts, reliability, trailer.

    What the header declares is read before the trials stream (Seen.gather), so the lines go out
    as they are encoded, each trial checked against the header on its way."""
    _check_form(form)
    seen = Seen()
    seen.gather(run, form)
    counts = counts_lines(run, form, seen) + reliability_lines(run, seen)
    digest = hashlib.sha256()
    head = ENCODER.encode(run_header(run, seen, form)) + b"\n"
    digest.update(head)
    yield head
    count = 0
    buffer = bytearray()
    parts: list[TrialRecord] = []
    for record in iter_trials(run, seen, form):
        parts.append(record)
        if len(parts) >= 512:
            buffer += ENCODER.encode_lines(parts)
            count += len(parts)
            parts = []
            if len(buffer) >= CHUNK_BYTES:
                digest.update(buffer)
                yield bytes(buffer)
                buffer.clear()
    buffer += ENCODER.encode_lines(parts) + ENCODER.encode_lines(counts)
    count += len(parts)
    digest.update(buffer)
    yield bytes(buffer)
    yield ENCODER.encode({"type": "end", "trials": count, "sha256": digest.hexdigest()}) + b"\n"


def export_jsonl(run: Run, form: str = PUBLIC) -> Iterator[str]:
    """The JSON Lines export as text chunks."""
    for chunk in iter_jsonl_bytes(run, form):
        yield chunk.decode()
